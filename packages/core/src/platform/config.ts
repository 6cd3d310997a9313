import { z } from 'zod';
import { describeIssues } from '../http/issues.js';

/**
 * Platform settings read from the environment, validated once at start so a typo fails the boot
 * with a message naming the variable instead of surfacing later as odd behaviour.
 *
 * @see docs/configuration.md
 */
const optionalUrl = z
  .string()
  .trim()
  .transform((v) => v.replace(/\/+$/, ''))
  .pipe(z.url({ protocol: /^https?$/ }))
  .optional();

const envSchema = z.object({
  SERVICE_BASE_URL: optionalUrl,
  SERVICE_IDP_URL: optionalUrl,
  SERVICE_IDP_ISSUER: z.string().trim().max(2048).optional(),
  SERVICE_IDP_AUDIENCE: z.string().trim().max(2048).optional(),
  SERVICE_TRUSTED_PROXIES: z.coerce.number().int().min(0).max(10).optional(),
  SERVICE_CORS_DOMAIN: z
    .string()
    .trim()
    .regex(/^[a-z0-9.-]+$/i, 'must be a bare domain such as example.com')
    .optional(),
  SERVICE_STORE_ENCRYPTION_KEY: z
    .string()
    .trim()
    .refine(
      (v) => v.split(',').every((part) => Buffer.from(part.trim(), 'base64').length === 32),
      'must be base64 of 32 bytes (several keys may be comma-separated, the first seals)',
    )
    .optional(),
  MARGIN_PERCENT: z
    .string()
    .trim()
    .regex(/^\d{1,4}(\.\d{1,4})?$/, 'must be a non-negative percent such as 20 or 12.5')
    .optional(),
  SERVICE_ADMIN_EMAILS: z
    .string()
    .transform((v) => v.split(',').map((email) => email.trim().toLowerCase()))
    .pipe(z.array(z.email('must be comma-separated email addresses')).max(100))
    .optional(),
  STRIPE_SECRET_KEY: z.string().trim().max(2048).optional(),
  STRIPE_WEBHOOK_SECRET: z.string().trim().max(2048).optional(),
  NODE_ENV: z.string().optional(),
});

export interface PlatformEnvConfig {
  baseUrl?: string;
  idpUrl?: string;
  /** The `iss` identity tokens must carry. Default `{idpUrl}/auth/v1`. */
  idpIssuer?: string;
  /** The `aud` identity tokens must carry. Default `authenticated`. */
  idpAudience?: string;
  trustedProxies?: number;
  corsDomain?: string;
  encryptionKey?: string;
  marginPercent?: string;
  /** Emails of platform admins, lowercased (`SERVICE_ADMIN_EMAILS`). */
  adminEmails?: string[];
  /** The Stripe processor's keys (`STRIPE_SECRET_KEY`, `STRIPE_WEBHOOK_SECRET`): both or neither. */
  stripe?: { secretKey: string; webhookSecret: string };
  production: boolean;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
  readonly code = 'ERR_SERVICE_CONFIG';
}

/** Reads the platform's variables; blank values count as unset. */
export function readPlatformEnv(env: Record<string, string | undefined>): PlatformEnvConfig {
  const present = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ''),
  );
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(`Invalid configuration: ${describeIssues(parsed.error)}`);
  }
  const v = parsed.data;
  // One without the other would take payments whose credit never lands, or verify nothing.
  if (!v.STRIPE_SECRET_KEY !== !v.STRIPE_WEBHOOK_SECRET) {
    throw new ConfigError(
      'Invalid configuration: STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET must be set together',
    );
  }
  return {
    ...(v.SERVICE_BASE_URL ? { baseUrl: v.SERVICE_BASE_URL } : {}),
    ...(v.SERVICE_IDP_URL ? { idpUrl: v.SERVICE_IDP_URL } : {}),
    ...(v.SERVICE_IDP_ISSUER ? { idpIssuer: v.SERVICE_IDP_ISSUER } : {}),
    ...(v.SERVICE_IDP_AUDIENCE ? { idpAudience: v.SERVICE_IDP_AUDIENCE } : {}),
    ...(v.SERVICE_TRUSTED_PROXIES !== undefined ? { trustedProxies: v.SERVICE_TRUSTED_PROXIES } : {}),
    ...(v.SERVICE_CORS_DOMAIN ? { corsDomain: v.SERVICE_CORS_DOMAIN } : {}),
    ...(v.SERVICE_STORE_ENCRYPTION_KEY ? { encryptionKey: v.SERVICE_STORE_ENCRYPTION_KEY } : {}),
    ...(v.MARGIN_PERCENT ? { marginPercent: v.MARGIN_PERCENT } : {}),
    ...(v.SERVICE_ADMIN_EMAILS ? { adminEmails: v.SERVICE_ADMIN_EMAILS } : {}),
    ...(v.STRIPE_SECRET_KEY && v.STRIPE_WEBHOOK_SECRET
      ? { stripe: { secretKey: v.STRIPE_SECRET_KEY, webhookSecret: v.STRIPE_WEBHOOK_SECRET } }
      : {}),
    production: v.NODE_ENV === 'production',
  };
}
