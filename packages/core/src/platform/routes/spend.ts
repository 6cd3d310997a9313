import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { NO_STORE } from '../../http/errors.js';
import { isUuid } from '../../internal/uuid.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { readJsonBody } from '../internal/json-body.js';
import { requireBillingOwner, requireSafeCookieWrite, requireSession } from '../internal/session.js';

const micros = z.number().int().positive().max(Number.MAX_SAFE_INTEGER).nullable();
const capSchema = z
  .strictObject({
    app_id: z.string().max(64),
    daily_micros: micros,
    monthly_micros: micros,
    warn_pcts: z.array(z.number().int().min(1).max(99)).max(5).optional(),
  })
  .refine(
    // A daily cap above the monthly one could never be reached: most likely a slip of a digit.
    (cap) =>
      cap.daily_micros === null || cap.monthly_micros === null || cap.daily_micros <= cap.monthly_micros,
    {
      path: ['daily_micros'],
      message: 'must not be above monthly_micros: the monthly cap would stop calls first',
    },
  );

/**
 * Dashboard billing: spend caps, burn rate and the usage rollup. Session cookie only, and only
 * the workspace's owners (billing is theirs: members and viewers get 403). Flat error bodies.
 *
 * @see docs/api/billing.md
 */
export function spendRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const ownerOf = async (c: Context<PlatformEnv>) => {
    const user = await requireSession(ctx, c);
    requireBillingOwner(user);
    return user;
  };

  app.get('/api/billing/spend-caps', async (c) => {
    c.set('errorShape', 'flat');
    const user = await ownerOf(c);
    await ctx.metering.settled(user.tenantId);
    return c.json({ caps: await ctx.billing.spendCaps(user.tenantId, new Date()) }, 200, NO_STORE);
  });

  app.put('/api/billing/spend-caps', async (c) => {
    c.set('errorShape', 'flat');
    const user = await ownerOf(c);
    requireSafeCookieWrite(ctx, c);
    const body = await readJsonBody(c, capSchema);
    const found =
      isUuid(body.app_id) &&
      (await ctx.billing.setSpendCap(user.tenantId, {
        appId: body.app_id,
        dailyMicros: body.daily_micros,
        monthlyMicros: body.monthly_micros,
        warnPcts: body.warn_pcts,
      }));
    if (!found) throw new PlatformError(404, 'Not found', { code: 'NOT_FOUND' });
    ctx.metering.forgetCaps(body.app_id);
    const caps = await ctx.billing.spendCaps(user.tenantId, new Date());
    return c.json({ cap: caps.find((cap) => cap.app_id === body.app_id) }, 200, NO_STORE);
  });

  app.get('/api/billing/burn-rate', async (c) => {
    c.set('errorShape', 'flat');
    const user = await ownerOf(c);
    const balance = await ctx.balances.micros(user.tenantId);
    return c.json(await ctx.billing.burnRate(user.tenantId, balance, new Date()), 200, NO_STORE);
  });

  app.get('/api/billing/usage', async (c) => {
    c.set('errorShape', 'flat');
    const user = await ownerOf(c);
    const daysParam = c.req.query('days') ?? '30';
    const days = Number(daysParam);
    if (!/^\d{1,2}$/.test(daysParam) || days < 1 || days > 90) {
      throw new PlatformError(400, 'days must be a whole number from 1 to 90', { code: 'INVALID_REQUEST' });
    }
    await ctx.metering.settled(user.tenantId);
    return c.json(await ctx.billing.tenantUsage(user.tenantId, days, new Date()), 200, NO_STORE);
  });

  return app;
}
