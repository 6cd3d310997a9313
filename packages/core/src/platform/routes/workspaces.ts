import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { NO_STORE } from '../../http/errors.js';
import type { UserProfile, WorkspaceSummary } from '../../identity/workspaces.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { displayName } from '../internal/display-name.js';
import { readJsonBody } from '../internal/json-body.js';
import { noStoreOn } from '../internal/no-store.js';
import { requireSafeCookieWrite, requireSession, requireUser } from '../internal/session.js';

const renameWorkspaceSchema = z.strictObject({ name: displayName });
const createWorkspaceSchema = z.strictObject({ name: displayName });
const switchSchema = z.strictObject({ tenantId: z.string().max(64) });
const renameUserSchema = z.strictObject({ name: displayName.nullable() });

/**
 * The signed-in user's account and workspaces: `/api/user/me`, `/api/tenants/me` (the current
 * workspace), `/api/tenants` (all of theirs, and a new one) and the workspace switch. Session
 * cookie only; camelCase bodies; flat error bodies. Renaming a workspace is for its owners.
 *
 * @see docs/api/workspaces.md
 */
export function workspaceRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const workspaces = ctx.workspaces;
  // Every answer, refusals included (members' and invitations' routes under /api/tenants too).
  noStoreOn(app, '/api/user/*', '/api/tenants/*');

  /** The signed-in user, any workspace or none; `write` also refuses unsafe cookie writes. */
  const userOf = async (c: Context<PlatformEnv>, write: boolean) => {
    c.set('errorShape', 'flat');
    const user = await requireUser(ctx, c);
    if (write) requireSafeCookieWrite(ctx, c);
    return user;
  };

  app.get('/api/user/me', async (c) => {
    const user = await userOf(c, false);
    return c.json({ user: publicUser(await workspaces.profile(user.userId)) }, 200, NO_STORE);
  });

  app.patch('/api/user/me', async (c) => {
    const user = await userOf(c, true);
    const body = await readJsonBody(c, renameUserSchema);
    return c.json({ user: publicUser(await workspaces.renameUser(user.userId, body.name)) }, 200, NO_STORE);
  });

  app.get('/api/tenants/me', async (c) => {
    c.set('errorShape', 'flat');
    const user = await requireSession(ctx, c);
    return c.json(
      { tenant: publicWorkspace(await workspaces.get(user.tenantId, user.userId)) },
      200,
      NO_STORE,
    );
  });

  app.patch('/api/tenants/me', async (c) => {
    c.set('errorShape', 'flat');
    const user = await requireSession(ctx, c);
    if (user.role !== 'owner') {
      throw new PlatformError(403, 'Forbidden: only workspace owners change the workspace', {
        code: 'FORBIDDEN',
      });
    }
    requireSafeCookieWrite(ctx, c);
    const body = await readJsonBody(c, renameWorkspaceSchema);
    const renamed = await workspaces.rename(user.tenantId, user.userId, body.name);
    return c.json({ tenant: publicWorkspace(renamed) }, 200, NO_STORE);
  });

  app.get('/api/tenants', async (c) => {
    const user = await userOf(c, false);
    const list = await workspaces.listFor(user.userId);
    return c.json(
      { tenants: list.map(publicWorkspace), currentTenantId: currentOf(user.tenantId, list) },
      200,
      NO_STORE,
    );
  });

  app.post('/api/tenants', async (c) => {
    const user = await userOf(c, true);
    const body = await readJsonBody(c, createWorkspaceSchema);
    return c.json(
      { tenant: publicWorkspace(await workspaces.create(user.userId, body.name)) },
      201,
      NO_STORE,
    );
  });

  app.post('/api/tenants/switch', async (c) => {
    const user = await userOf(c, true);
    const body = await readJsonBody(c, switchSchema);
    return c.json(
      { tenant: publicWorkspace(await workspaces.switchTo(user.userId, body.tenantId)) },
      200,
      NO_STORE,
    );
  });

  return app;
}

/** The current workspace, when the user is still a member of it. */
function currentOf(tenantId: string | null, list: WorkspaceSummary[]): string | null {
  return list.some((workspace) => workspace.id === tenantId) ? tenantId : null;
}

function publicWorkspace(workspace: WorkspaceSummary) {
  return {
    id: workspace.id,
    name: workspace.name,
    status: workspace.status,
    role: workspace.role,
    createdAt: workspace.createdAt.toISOString(),
  };
}

function publicUser(user: UserProfile) {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    currentTenantId: user.currentTenantId,
    createdAt: user.createdAt.toISOString(),
  };
}
