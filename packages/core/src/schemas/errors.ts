import { z } from 'zod';

/**
 * Codes of the canonical error body (`{ error: { code, message, ... } }` plus the
 * `Service-Error-Code` header), one closed set shared by the server and the SDK.
 *
 * @see docs/errors.md
 */
export const SERVICE_ERROR_CODES = {
  /** 401: missing, unknown, revoked or expired credential. */
  unauthorized: 401,
  /** 403: authenticated, but the App Key has no binding (connection) for the provider. */
  not_connected: 403,
  /** 403: authenticated, but not allowed (another tenant's resource, wrong key kind). */
  forbidden: 403,
  /** 403: the key's workspace is suspended by the platform's operator; its keys still exist. */
  tenant_suspended: 403,
  /** 402: the wallet is at or below zero; a metered call was refused before reaching upstream. */
  balance_exhausted: 402,
  /** 402: an app spend cap (daily or monthly) is exhausted for the current window. */
  spend_cap_exceeded: 402,
  /** 429: too many requests. */
  rate_limited: 429,
  /** 429: too many concurrent event streams for one app. */
  rate_limit_sse_streams: 429,
  /** 400: the request is malformed. */
  validation_failed: 400,
  /** 404 */
  not_found: 404,
  /** 405: a method the route does not take; `Allow` lists those it does. */
  method_not_allowed: 405,
  /** 409 */
  conflict: 409,
  /** 413 */
  payload_too_large: 413,
  /** 502: the upstream provider could not be reached or failed. */
  upstream_error: 502,
  /** 500 */
  internal_error: 500,
  /** 503: the platform's database is briefly unreachable; try again after `Retry-After` seconds. */
  service_unavailable: 503,
} as const;
export type ServiceErrorCode = keyof typeof SERVICE_ERROR_CODES;

export const canonicalErrorBodySchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    slug: z.string().optional(),
    retry_after: z.number().optional(),
    connect_url: z.string().optional(),
    suggested_fix: z.string().optional(),
    /** Spend caps: which window tripped and when it resets (ISO 8601). */
    window: z.enum(['daily', 'monthly']).optional(),
    resets_at: z.string().optional(),
  }),
});
export type CanonicalErrorBody = z.infer<typeof canonicalErrorBodySchema>;

/** `{ error: { message } }`: the balance endpoints and the runtime connections list. */
export const nestedErrorBodySchema = z.object({ error: z.object({ message: z.string() }) });

/** `{ message, code? }`: dashboard routes and `/api/cli/balance`. */
export const flatErrorBodySchema = z.object({ message: z.string(), code: z.string().optional() }).loose();
