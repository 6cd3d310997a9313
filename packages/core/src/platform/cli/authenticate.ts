import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { flatError } from '../../http/errors.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import { bearerToken, looksLikeJwt } from '../../identity/bearer.js';
import type { KeyPrincipal } from '../../identity/key-store.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { overLimit } from '../internal/rate-limit.js';

/** Per-IP limit of each CLI route, the same as `/api/cli/balance`'s. */
export const CLI_ROUTE_LIMIT: RateLimitRule = { limit: 30, windowMs: 60_000 };

const NO_STORE = { 'cache-control': 'no-store' };

/**
 * The key behind a CLI request, or the flat error response to answer with. Counts the request
 * against the route's per-IP limit first (so guessing keys is limited too), then accepts only
 * live `service_sk_*` keys; an identity JWT is refused without being verified, as on
 * `/api/cli/balance`.
 *
 * @see platform-spec.md "Authentication" ("Developer CLI auth"), "Errors / Balance endpoints"
 */
export async function authenticateCliRequest(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
  limitName: string,
): Promise<KeyPrincipal | Response> {
  c.set('errorShape', 'flat');
  const wait = await overLimit(ctx, c, limitName, CLI_ROUTE_LIMIT);
  if (wait !== null) {
    return flatError(429, 'Rate limit exceeded', {}, { ...NO_STORE, 'retry-after': String(wait) });
  }
  const token = bearerToken(c.req.header('authorization'));
  if (!token) return flatError(401, 'Missing Bearer token', {}, NO_STORE);
  const key = looksLikeJwt(token) ? null : await ctx.keys.authenticate(token);
  if (!key) return flatError(401, 'Invalid or revoked API key', {}, NO_STORE);
  return key;
}

/** Bodies of the CLI routes are a few fields; anything past 16 KiB is refused before parsing. */
export const CLI_MAX_BODY_BYTES = 16 * 1024;

/** Refuses a body past `CLI_MAX_BODY_BYTES` while it streams, chunked ones included. */
export const limitBody = bodyLimit({
  maxSize: CLI_MAX_BODY_BYTES,
  onError: () => flatError(413, 'Request body too large', {}, NO_STORE),
});
