import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { NO_STORE } from '../../http/errors.js';
import type { MembershipRole } from '../../store/database.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { readJsonBody } from '../internal/json-body.js';
import { optionalUser, requireSafeCookieWrite, requireUser } from '../internal/session.js';

const toggleSchema = z.strictObject({ enabled: z.boolean() });

/** Roles that may switch a workspace's integrations: those who may change its connections. */
const SWITCHERS: ReadonlySet<MembershipRole> = new Set(['owner', 'member']);

/**
 * The workspace's answers vary by the session cookie: the anonymous one is the platform's to
 * cache (five minutes, in memory), not a shared cache's, which could hand it to a signed-in user.
 */
const ANONYMOUS = { 'cache-control': 'no-cache', vary: 'Cookie' } as const;
const SIGNED_IN = { ...NO_STORE, vary: 'Cookie' } as const;

/**
 * `/api/integrations`: the catalog's integrations, in the public shape to anonymous callers and
 * with the workspace's overlay to signed-in ones; a workspace's own switch of each; key
 * regeneration (refused today: every live integration runs on a shared upstream credential).
 * Flat error bodies.
 *
 * Order of checks on the writes: 401 (no session), 403/415 (a cookie write from another origin
 * or without JSON), 404 (no workspace), 403 (a viewer), 429 (the shared integration limiter),
 * 404 (unknown integration), 400 (the body, or why regeneration is refused).
 *
 * @see docs/api/integrations.md
 */
export function integrationRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const integrations = ctx.integrations;

  /** The signed-in caller's workspace and role, or null when they have none. */
  const workspaceOf = async (user: { tenantId: string | null; userId: string }) => {
    if (!user.tenantId) return null;
    const role = await ctx.accounts.roleIn(user.tenantId, user.userId);
    return role ? { tenantId: user.tenantId, role } : null;
  };

  /** The caller of a write: signed in, safe cookie write, in a workspace as owner or member, under the limit. */
  const switcherOf = async (c: Context<PlatformEnv>, noWorkspace: string) => {
    c.set('errorShape', 'flat');
    const user = await requireUser(ctx, c);
    requireSafeCookieWrite(ctx, c);
    const workspace = await workspaceOf(user);
    if (!workspace) throw new PlatformError(404, noWorkspace);
    if (!SWITCHERS.has(workspace.role)) {
      throw new PlatformError(403, "Forbidden: only the workspace's owners and members switch integrations", {
        code: 'FORBIDDEN',
      });
    }
    const verdict = await ctx.limiter.hit(`integrations:${user.userId}`, ctx.rateLimits.integrations);
    if (!verdict.allowed) {
      throw new PlatformError(429, 'Rate limit exceeded', {
        headers: { 'retry-after': String(verdict.retryAfterSeconds) },
      });
    }
    return { userId: user.userId, tenantId: workspace.tenantId };
  };

  app.get('/api/integrations', async (c) => {
    c.set('errorShape', 'flat');
    const user = await optionalUser(ctx, c);
    if (!user) return c.json({ integrations: await integrations.publicList() }, 200, ANONYMOUS);
    const workspace = await workspaceOf(user);
    if (!workspace) throw new PlatformError(404, 'No workspace found');
    return c.json(await integrations.forTenant(workspace.tenantId), 200, SIGNED_IN);
  });

  app.get('/api/integrations/:slug', async (c) => {
    c.set('errorShape', 'flat');
    const slug = c.req.param('slug');
    const user = await optionalUser(ctx, c);
    if (!user) {
      const detail = await integrations.publicDetail(slug);
      if (!detail) throw new PlatformError(404, 'Not found');
      return c.json(detail, 200, ANONYMOUS);
    }
    const workspace = await workspaceOf(user);
    if (!workspace) throw new PlatformError(404, 'No workspace found');
    const row = await integrations.oneForTenant(workspace.tenantId, slug);
    if (!row) throw new PlatformError(404, 'Not found');
    return c.json(row, 200, SIGNED_IN);
  });

  app.post('/api/integrations/:slug', async (c) => {
    const caller = await switcherOf(c, 'Not found');
    const integration = await integrations.find(c.req.param('slug'));
    // A platform-disabled integration is withdrawn: not there to switch.
    if (!integration?.enabled) throw new PlatformError(404, 'Not found');
    const { enabled } = await readJsonBody(c, toggleSchema);
    await integrations.setTenantSwitch(caller.tenantId, integration.provider, enabled, caller.userId);
    let error: string | null = null;
    if (enabled && (integration.kind === 'speech_synthesis' || integration.kind === 'transcription')) {
      try {
        await ctx.connections.ensureManaged(caller.tenantId, integration.provider);
      } catch (failure) {
        // The switch stays as the tenant set it; the answer says what provisioning lacked.
        error = failure instanceof Error ? failure.message : String(failure);
        ctx.logger.warn('managed pool provisioning failed', {
          request_id: c.get('requestId'),
          provider: integration.provider,
          error_message: error,
        });
      }
    }
    // The proxy reads connections through a short cache: what changed is seen by the next call.
    ctx.connectionResolver.forget(caller.tenantId, integration.provider);
    return c.json(error === null ? { enabled } : { enabled, error }, 200, NO_STORE);
  });

  app.post('/api/integrations/:slug/regenerate', async (c) => {
    const caller = await switcherOf(c, 'No workspace');
    const integration = await integrations.find(c.req.param('slug'));
    if (!integration) throw new PlatformError(404, 'Integration not found');
    const state = await integrations.oneForTenant(caller.tenantId, integration.provider);
    if (!state?.tenantEnabled && !state?.provisioned)
      throw new PlatformError(400, 'Integration not provisioned');
    if (integration.kind === 'llm_gateway') {
      throw new PlatformError(
        400,
        `${integration.name} is managed by a shared upstream credential; there is no key of this workspace to regenerate`,
      );
    }
    throw new PlatformError(400, 'This integration does not support key regeneration');
  });

  return app;
}
