import { Hono } from 'hono';
import { z } from 'zod';
import { listSpendCaps, setSpendCap } from '../../billing/spend-caps.js';
import { burnRate, tenantUsage } from '../../billing/usage-report.js';
import { isUuid } from '../../connections/service.js';
import { flatError } from '../../http/errors.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { readJsonBody } from '../internal/json-body.js';
import { cookieWriteRefusal, sessionCaller } from '../internal/session.js';

const micros = z.number().int().positive().max(Number.MAX_SAFE_INTEGER).nullable();
const capSchema = z.strictObject({
  app_id: z.string().max(64),
  daily_micros: micros,
  monthly_micros: micros,
  warn_pcts: z.array(z.number().int().min(1).max(99)).max(5).optional(),
});
const NO_STORE = { 'cache-control': 'no-store' };

/**
 * Dashboard billing: spend caps, burn rate and the usage rollup. Session cookie only; caps are
 * changed by owners. Flat error bodies.
 *
 * @see platform-spec.md "Dashboard-only billing surface", docs/api/billing.md
 */
export function spendRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();

  app.get('/api/billing/spend-caps', async (c) => {
    c.set('errorShape', 'flat');
    const user = await sessionCaller(ctx, c);
    if (!user) return flatError(401, 'Unauthorized');
    await ctx.metering.settled(user.tenantId);
    return c.json({ caps: await listSpendCaps(ctx.db, user.tenantId, new Date()) }, 200, NO_STORE);
  });

  app.put('/api/billing/spend-caps', async (c) => {
    c.set('errorShape', 'flat');
    const user = await sessionCaller(ctx, c);
    if (!user) return flatError(401, 'Unauthorized');
    const refusal = cookieWriteRefusal(ctx, c);
    if (refusal === 'cross_origin') return flatError(403, 'Cross-origin request refused');
    if (refusal === 'not_json') return flatError(415, 'Content-Type must be application/json');
    if (user.role !== 'owner') return flatError(403, 'Forbidden: only owners set spend caps');
    const body = await readJsonBody(c, capSchema);
    if (!body.ok) return flatError(body.status, body.message, { code: 'INVALID_REQUEST' });
    const found =
      isUuid(body.data.app_id) &&
      (await setSpendCap(ctx.db, user.tenantId, {
        appId: body.data.app_id,
        dailyMicros: body.data.daily_micros,
        monthlyMicros: body.data.monthly_micros,
        warnPcts: body.data.warn_pcts,
      }));
    if (!found) return flatError(404, 'Not found', { code: 'NOT_FOUND' });
    ctx.metering.forgetCaps(body.data.app_id);
    const caps = await listSpendCaps(ctx.db, user.tenantId, new Date());
    return c.json({ cap: caps.find((cap) => cap.app_id === body.data.app_id) }, 200, NO_STORE);
  });

  app.get('/api/billing/burn-rate', async (c) => {
    c.set('errorShape', 'flat');
    const user = await sessionCaller(ctx, c);
    if (!user) return flatError(401, 'Unauthorized');
    const balance = await ctx.balances.micros(user.tenantId);
    return c.json(await burnRate(ctx.db, user.tenantId, balance, new Date()), 200, NO_STORE);
  });

  app.get('/api/billing/usage', async (c) => {
    c.set('errorShape', 'flat');
    const user = await sessionCaller(ctx, c);
    if (!user) return flatError(401, 'Unauthorized');
    const daysParam = c.req.query('days') ?? '30';
    const days = Number(daysParam);
    if (!/^\d{1,2}$/.test(daysParam) || days < 1 || days > 90) {
      return flatError(400, 'days must be a whole number from 1 to 90', { code: 'INVALID_REQUEST' });
    }
    await ctx.metering.settled(user.tenantId);
    return c.json(await tenantUsage(ctx.db, user.tenantId, days, new Date()), 200, NO_STORE);
  });

  return app;
}
