import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import { NO_STORE } from '../../http/errors.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import { bearerToken, looksLikeJwt } from '../../identity/bearer.js';
import type { KeyPrincipal } from '../../identity/key-store.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import {
  credentialFailed,
  credentialsBlocked,
  FAILED_CREDENTIALS_MESSAGE,
  overLimit,
} from '../internal/rate-limit.js';

/** Per-IP limit of each CLI route, the same as `/api/cli/balance`'s. */
export const CLI_ROUTE_LIMIT: RateLimitRule = { limit: 30, windowMs: 60_000 };

export { NO_STORE };

/**
 * The key behind a CLI request; refuses (throws) with a flat error otherwise. Counts the request
 * against the route's per-IP limit first (so guessing keys is limited too), then accepts only
 * live `service_sk_*` keys; an identity JWT is refused without being verified, as on
 * `/api/cli/balance`. A key that fails counts against the address's failed credentials (429 past
 * the limit).
 */
export async function authenticateCliRequest(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
  limitName: string,
): Promise<KeyPrincipal> {
  c.set('errorShape', 'flat');
  const wait = await overLimit(ctx, c, limitName, CLI_ROUTE_LIMIT);
  if (wait !== null) {
    throw new PlatformError(429, 'Rate limit exceeded', {
      headers: { ...NO_STORE, 'retry-after': String(wait) },
    });
  }
  const token = bearerToken(c.req.header('authorization'));
  if (!token) throw new PlatformError(401, 'Missing Bearer token', { headers: NO_STORE });
  const throttled = (seconds: number) =>
    new PlatformError(429, FAILED_CREDENTIALS_MESSAGE, {
      headers: { ...NO_STORE, 'retry-after': String(seconds) },
    });
  const blocked = credentialsBlocked(ctx, c);
  if (blocked !== null) throw throttled(blocked);
  const key = looksLikeJwt(token) ? null : await ctx.keys.authenticate(token);
  if (key) return key;
  const failedWait = await credentialFailed(ctx, c);
  throw failedWait === null
    ? new PlatformError(401, 'Invalid or revoked API key', { headers: NO_STORE })
    : throttled(failedWait);
}

/** Bodies of the CLI routes are a few fields; anything past 16 KiB is refused before parsing. */
export const CLI_MAX_BODY_BYTES = 16 * 1024;

/** The flat 413 of a CLI body past `CLI_MAX_BODY_BYTES`. */
export const bodyTooLarge = () => new PlatformError(413, 'Request body too large', { headers: NO_STORE });

/**
 * Refuses a body whose declared length is past `CLI_MAX_BODY_BYTES` before anything else, unread.
 * A chunked body has no declared length: the route's capped read refuses it at the cap.
 */
export const limitBody = createMiddleware<PlatformEnv>(async (c, next) => {
  if (Number(c.req.header('content-length') ?? '0') > CLI_MAX_BODY_BYTES) throw bodyTooLarge();
  await next();
});
