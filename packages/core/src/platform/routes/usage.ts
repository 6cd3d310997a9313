import { Hono } from 'hono';
import { USAGE_RANGES, type UsageRange } from '../../billing/usage-report.js';
import { NO_STORE } from '../../http/errors.js';
import { ownValue } from '../../http/input-guard.js';
import { isUuid } from '../../internal/uuid.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { requireBillingOwner, requireSession } from '../internal/session.js';

/**
 * Usage of one deployment (owners of its workspace only; not for deployed tools or SDKs) and of
 * one integration. Session cookie only; flat error bodies.
 */
export function usageRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();

  app.get('/api/deployments/:id/usage', async (c) => {
    c.set('errorShape', 'flat');
    const user = await requireSession(ctx, c);
    const range = (c.req.query('range') ?? '24h') as UsageRange;
    // Own keys only: `?range=constructor` names no range, whatever every object inherits.
    if (ownValue(USAGE_RANGES, range) === undefined) {
      throw new PlatformError(400, 'range must be one of 1h, 24h, 7d, 30d', { code: 'INVALID_REQUEST' });
    }
    const id = c.req.param('id');
    if (!isUuid(id) || !(await ctx.billing.hasDeployment(user.tenantId, id))) {
      throw new PlatformError(404, 'Not found');
    }
    requireBillingOwner(user);
    await ctx.metering.settled(user.tenantId);
    return c.json(await ctx.billing.deploymentUsage(id, range, new Date()), 200, NO_STORE);
  });

  app.get('/api/integrations/:slug/usage', async (c) => {
    c.set('errorShape', 'flat');
    const user = await requireSession(ctx, c, { noWorkspace: 'No workspace' });
    // It reports the workspace's spend: billing, which is owners' business.
    requireBillingOwner(user);
    const slug = c.req.param('slug');
    if (!(await ctx.billing.hasIntegration(slug))) throw new PlatformError(404, 'Not found');
    const provider = await ctx.providers.get(slug);
    const tokenMetered = provider !== null && provider.dialect !== 'per_call';
    await ctx.metering.settled(user.tenantId);
    return c.json(
      await ctx.billing.integrationUsage(user.tenantId, slug, tokenMetered, new Date()),
      200,
      NO_STORE,
    );
  });

  return app;
}
