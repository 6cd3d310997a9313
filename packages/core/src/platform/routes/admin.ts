import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { microsToUsd } from '../../billing/ledger.js';
import { MAX_GRANT_MICROS, type OperatorAction, type TenantOverview } from '../../billing/operators.js';
import { wholeCentsMicros } from '../../billing/payments/processor.js';
import { NO_STORE } from '../../http/errors.js';
import { wholeNumber } from '../../http/whole-number.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { withIdempotency } from '../internal/idempotency.js';
import { readJsonBody } from '../internal/json-body.js';
import { noStoreOn } from '../internal/no-store.js';
import { requirePlatformAdmin, type SessionCaller } from '../internal/session.js';

const MAX_GRANT_USD = MAX_GRANT_MICROS / 1_000_000;
const reason = z.string().trim().min(1).max(500);

const grantSchema = z.strictObject({
  amountUsd: z
    .number()
    .positive()
    .max(MAX_GRANT_USD)
    .refine((usd) => wholeCentsMicros(usd) !== null, 'must be whole cents'),
  reason,
});
const suspendSchema = z.strictObject({ reason });
const resumeSchema = z.strictObject({ reason: reason.optional() });
const integrationSwitchSchema = z.strictObject({ enabled: z.boolean() });
const pageSchema = z.object({
  limit: wholeNumber(1, 200).default(50),
  offset: wholeNumber(0, 1_000_000).default(0),
});

/**
 * The operators' API: list and read tenants, grant credit, suspend and resume. Session cookie of
 * a platform admin (a signed-in user whose email is in `SERVICE_ADMIN_EMAILS`); everyone else
 * signed in gets 403, nobody signed in 401. Bodies and answers camelCase; flat error bodies.
 * Every action writes an audit row with who, what, when and why.
 *
 * @see docs/operators.md
 */
export function adminRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const operators = ctx.operators;
  // Every admin answer, refusals included (the catalog's and OAuth clients' admin routes too).
  noStoreOn(app, '/api/admin/*');

  /** The signed-in admin; `write` also refuses unsafe cookie writes. */
  const adminOf = (c: Context<PlatformEnv>, write: boolean): Promise<SessionCaller> =>
    requirePlatformAdmin(ctx, c, write);
  const tenantOrNotFound = async (tenantId: string) => {
    const tenant = await operators.getTenant(tenantId);
    if (!tenant) throw new PlatformError(404, 'Tenant not found', { code: 'TENANT_NOT_FOUND' });
    return tenant;
  };

  app.get('/api/admin/tenants', async (c) => {
    await adminOf(c, false);
    const page = pageSchema.safeParse(c.req.query());
    if (!page.success) {
      throw new PlatformError(400, 'limit must be 1 to 200 and offset 0 or more', {
        code: 'INVALID_REQUEST',
      });
    }
    const tenants = await operators.listTenants(page.data);
    return c.json({ tenants: tenants.map(publicTenant) }, 200, NO_STORE);
  });

  app.get('/api/admin/tenants/:id', async (c) => {
    await adminOf(c, false);
    const tenant = await tenantOrNotFound(c.req.param('id'));
    const actions = await operators.actions(tenant.id);
    return c.json({ tenant: publicTenant(tenant), actions: actions.map(publicAction) }, 200, NO_STORE);
  });

  app.post('/api/admin/tenants/:id/grants', async (c) => {
    const admin = await adminOf(c, true);
    const body = await readJsonBody(c, grantSchema);
    const tenant = await tenantOrNotFound(c.req.param('id'));
    // Idempotency records belong to a tenant: here the one credited, so a key is per tenant and admin.
    const keyOwner = { tenantId: tenant.id, userId: admin.userId };
    return withIdempotency(ctx, c, keyOwner, 'admin-grant', body, async () => {
      const granted = await operators.grant({
        tenantId: tenant.id,
        operator: admin.email!,
        reason: body.reason,
        amountMicros: wholeCentsMicros(body.amountUsd)!,
      });
      return {
        status: 201,
        body: { action: publicAction(granted.action), balanceUsd: microsToUsd(granted.balanceAfterMicros) },
      };
    });
  });

  app.post('/api/admin/tenants/:id/suspend', async (c) => {
    const admin = await adminOf(c, true);
    const body = await readJsonBody(c, suspendSchema);
    const action = await operators.suspend({
      tenantId: c.req.param('id'),
      operator: admin.email!,
      reason: body.reason,
    });
    const tenant = await tenantOrNotFound(action.tenantId);
    return c.json({ tenant: publicTenant(tenant), action: publicAction(action) }, 200, NO_STORE);
  });

  app.post('/api/admin/tenants/:id/resume', async (c) => {
    const admin = await adminOf(c, true);
    const body = await readJsonBody(c, resumeSchema);
    const action = await operators.resume({
      tenantId: c.req.param('id'),
      operator: admin.email!,
      reason: body.reason ?? null,
    });
    const tenant = await tenantOrNotFound(action.tenantId);
    return c.json({ tenant: publicTenant(tenant), action: publicAction(action) }, 200, NO_STORE);
  });

  // Withdraws an integration from the catalog (or brings it back) on every instance at once.
  app.patch('/api/admin/integrations/:slug', async (c) => {
    await adminOf(c, true);
    const { enabled } = await readJsonBody(c, integrationSwitchSchema);
    const slug = c.req.param('slug');
    if (!(await ctx.integrations.setEnabled(slug, enabled))) {
      throw new PlatformError(404, 'Integration not found', { code: 'NOT_FOUND' });
    }
    return c.json({ provider: slug, enabled }, 200, NO_STORE);
  });

  return app;
}

function publicTenant(tenant: TenantOverview) {
  return {
    id: tenant.id,
    name: tenant.name,
    status: tenant.status,
    balanceUsd: microsToUsd(tenant.balanceMicros),
    ownerEmails: tenant.ownerEmails,
    createdAt: tenant.createdAt.toISOString(),
  };
}

function publicAction(action: OperatorAction) {
  return {
    id: String(action.id),
    tenantId: action.tenantId,
    action: action.action,
    operator: action.operator,
    reason: action.reason,
    amountUsd: action.amountMicros === null ? null : microsToUsd(action.amountMicros),
    ledgerEntryId: action.ledgerEntryId === null ? null : String(action.ledgerEntryId),
    createdAt: action.createdAt.toISOString(),
  };
}
