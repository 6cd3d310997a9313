import type { Context } from 'hono';
import { clientIp } from '../../http/client-ip.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import type { PlatformContext, PlatformEnv } from '../context.js';

/**
 * Counts this request against `rule` for the caller's IP under `name`. Returns the seconds to
 * wait when the limit is exceeded, or null when the request may proceed.
 */
export async function overLimit(
  ctx: PlatformContext,
  c: Context<PlatformEnv>,
  name: string,
  rule: RateLimitRule,
): Promise<number | null> {
  const ip = clientIp(c.req.raw, c.env, { trustedProxies: ctx.trustedProxies });
  const verdict = await ctx.limiter.hit(`${name}:${ip}`, rule);
  return verdict.allowed ? null : verdict.retryAfterSeconds;
}

/** What a request from a throttled address answers: its message, and seconds to wait. */
export const FAILED_CREDENTIALS_MESSAGE = 'Too many failed credentials from this address; retry later';

/**
 * Seconds the caller's address must wait before presenting a credential again (it sent too many
 * that failed), or null. Checked before the credential is looked up.
 */
export function credentialsBlocked(ctx: PlatformContext, c: Context<PlatformEnv>): number | null {
  return ctx.credentialThrottle.retryAfter(
    clientIp(c.req.raw, c.env, { trustedProxies: ctx.trustedProxies }),
  );
}

/** Counts a failed credential of the caller's address; seconds to wait when it is past the limit. */
export function credentialFailed(ctx: PlatformContext, c: Context<PlatformEnv>): Promise<number | null> {
  return ctx.credentialThrottle.failed(clientIp(c.req.raw, c.env, { trustedProxies: ctx.trustedProxies }));
}
