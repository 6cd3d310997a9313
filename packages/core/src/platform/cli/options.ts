import { z } from 'zod';
import { describeIssues } from '../../http/issues.js';
import { ConfigError } from '../config.js';

/** What the CLI routes need beyond the platform context. */
export interface CliRoutesOptions {
  /** Environment holding `SERVICE_SSH_BROKER_URL` and `SERVICE_SSH_BROKER_SECRET`. */
  env: Record<string, string | undefined>;
  /** The built-in development IdP runs, so signed-out visitors can be sent to its sign-in page. */
  devSignIn: boolean;
}

/** The ssh broker, when one is configured. */
export interface SshBrokerSettings {
  /** `ws://` or `wss://` URL the CLI connects to. */
  url: string;
  /** Shared secret the broker presents when it claims a session token. */
  secret: string;
}

const envSchema = z.object({
  SERVICE_SSH_BROKER_URL: z
    .string()
    .trim()
    .pipe(z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' }))
    .optional(),
  SERVICE_SSH_BROKER_SECRET: z.string().trim().min(32, 'must be at least 32 characters').optional(),
});

/**
 * Reads the ssh broker variables; both or neither must be set. Invalid values stop the boot with a
 * message naming the variable (never its value: one of them is a secret).
 *
 * @see docs/configuration.md
 */
export function readSshBroker(env: Record<string, string | undefined>): SshBrokerSettings | null {
  const present = Object.fromEntries(
    Object.entries(env).filter(([name, v]) => name.startsWith('SERVICE_SSH_') && v?.trim()),
  );
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(`Invalid configuration: ${describeIssues(parsed.error)}`);
  }
  const { SERVICE_SSH_BROKER_URL: url, SERVICE_SSH_BROKER_SECRET: secret } = parsed.data;
  if (!url && !secret) return null;
  if (!url || !secret) {
    throw new ConfigError(
      'Invalid configuration: SERVICE_SSH_BROKER_URL and SERVICE_SSH_BROKER_SECRET must be set together',
    );
  }
  return { url, secret };
}
