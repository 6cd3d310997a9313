import { Hono } from 'hono';
import { microsToUsd } from '../../billing/ledger.js';
import { corsHeaders, preflightResponse } from '../../http/cors.js';
import { flatError, nestedError } from '../../http/errors.js';
import { bearerToken, looksLikeJwt } from '../../identity/bearer.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { fastJson } from '../internal/fast-json.js';
import { noStoreOn } from '../internal/no-store.js';
import {
  credentialFailed,
  credentialsBlocked,
  FAILED_CREDENTIALS_MESSAGE,
  overLimit,
} from '../internal/rate-limit.js';

/**
 * The three balance endpoints. `/api/billing/balance` and `/api/v1/balance` accept any API key
 * or an identity JWT (dot-segment rule) and are CORS-enabled; `/api/cli/balance` accepts only
 * `service_sk_*` keys, has no CORS and no OPTIONS handler.
 */
export function balanceRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  // Every answer of the balance endpoints is for one caller at one moment, refusals included.
  noStoreOn(app, '/api/billing/balance', '/api/v1/balance', '/api/cli/balance');

  /** Tenant of a balance bearer: JWTs by JWKS (tenant ensured), anything else as a key. */
  const tenantOf = async (token: string): Promise<string | null> => {
    if (looksLikeJwt(token)) {
      const claims = await ctx.identity.verify(token);
      return claims ? (await ctx.accounts.ensure(claims)).tenantId : null;
    }
    return (await ctx.keys.authenticate(token))?.tenantId ?? null;
  };

  const corsBalance = (
    path: string,
    rule: keyof PlatformContext['rateLimits'],
    body: (tenantId: string, micros: number) => object,
  ) => {
    app.options(path, (c) => preflightResponse(c.req.header('origin') ?? null, ctx.cors));
    // The answers the platform's error handler builds (a fault, the store away) get them too.
    app.use(path, async (c, next) => {
      await next();
      if (c.res.headers.has('access-control-allow-origin')) return;
      for (const [name, value] of Object.entries(corsHeaders(c.req.header('origin') ?? null, ctx.cors))) {
        c.res.headers.set(name, value);
      }
    });
    app.get(path, async (c) => {
      c.set('errorShape', 'nested');
      const cors = corsHeaders(c.req.header('origin') ?? null, ctx.cors);
      const wait = await overLimit(ctx, c, rule, ctx.rateLimits[rule]);
      if (wait !== null)
        return nestedError(429, 'Rate limit exceeded', { ...cors, 'retry-after': String(wait) });
      const token = bearerToken(c.req.header('authorization'));
      if (!token) return nestedError(401, 'Missing Bearer token', cors);
      const throttled = (wait: number) =>
        nestedError(429, FAILED_CREDENTIALS_MESSAGE, { ...cors, 'retry-after': String(wait) });
      const blocked = credentialsBlocked(ctx, c);
      if (blocked !== null) return throttled(blocked);
      const tenantId = await tenantOf(token);
      if (!tenantId) {
        const failedWait = await credentialFailed(ctx, c);
        return failedWait === null
          ? nestedError(401, 'Invalid or revoked token', cors)
          : throttled(failedWait);
      }
      const micros = await ctx.balances.micros(tenantId);
      return fastJson(c, body(tenantId, micros), cors);
    });
  };

  corsBalance('/api/billing/balance', 'billingBalance', (_tenantId, micros) => ({
    credits_remaining_micros: Math.max(0, micros),
    currency: 'USD',
    top_up_url: ctx.topUpUrl,
  }));

  corsBalance('/api/v1/balance', 'v1Balance', (tenantId, micros) => ({
    balance_usd: microsToUsd(micros),
    tenant_id: tenantId,
  }));

  app.get('/api/cli/balance', async (c) => {
    c.set('errorShape', 'flat');
    const wait = await overLimit(ctx, c, 'cliBalance', ctx.rateLimits.cliBalance);
    if (wait !== null) return flatError(429, 'Rate limit exceeded', {}, { 'retry-after': String(wait) });
    const token = bearerToken(c.req.header('authorization'));
    if (!token) return flatError(401, 'Missing Bearer token');
    const throttled = (wait: number) =>
      flatError(429, FAILED_CREDENTIALS_MESSAGE, {}, { 'retry-after': String(wait) });
    const blocked = credentialsBlocked(ctx, c);
    if (blocked !== null) return throttled(blocked);
    // Server-to-server keys only: a JWT is refused without being verified.
    const key = looksLikeJwt(token) ? null : await ctx.keys.authenticate(token);
    if (!key) {
      const failedWait = await credentialFailed(ctx, c);
      return failedWait === null ? flatError(401, 'Invalid or revoked API key') : throttled(failedWait);
    }
    const micros = await ctx.balances.micros(key.tenantId);
    return c.json({ balance_usd: microsToUsd(micros) });
  });

  return app;
}
