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
