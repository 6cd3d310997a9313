/**
 * Organizations: `GET /orgs` (the user's, and the workspace in effect), `GET /orgs/:id`,
 * `GET /orgs/:id/members`, and `POST /orgs/switch` (work in an organization's workspace, or
 * `null` for the user's own). Mounted only with an `orgs` source; without one the whole family
 * answers 402 `cloud_required` before the principal is resolved.
 *
 * @see docs/wire.md "Organizations"
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { WireContext, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import type { WireOrgs } from '../orgs.js';
import { jsonBody, userOf } from '../request.js';

const ORG_ID = z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/, 'must be an organization id');
const switchSchema = z.object({ org: ORG_ID.nullable() });

export function orgRoutes(ctx: WireContext, source: WireOrgs): Hono<WireEnv> {
  const app = new Hono<WireEnv>();

  app.get('/orgs', async (c) => {
    const user = await signedIn(ctx, c);
    const orgs = await source.list(user);
    const selected = await ctx.orgSelections.current(user.subject);
    return c.json({ orgs, current: orgs.some((o) => o.id === selected) ? selected : null });
  });

  // A literal path ahead of `:id`, so `switch` is never read as an organization id.
  app.post('/orgs/switch', async (c) => {
    const user = await signedIn(ctx, c);
    const { org } = await jsonBody(ctx, c, switchSchema);
    if (org !== null && !(await source.list(user)).some((o) => o.id === org)) {
      throw new WireError('not_found', 'No such organization (or you are not a member).');
    }
    await ctx.orgSelections.switchTo(user.subject, org);
    ctx.audit.record(user.subject, 'org.switched', { org });
    return c.json({ current: org });
  });

  app.get('/orgs/:id', async (c) => {
    const user = await signedIn(ctx, c);
    const org = (await source.list(user)).find((o) => o.id === c.req.param('id'));
    if (!org) throw new WireError('not_found', 'No such organization (or you are not a member).');
    return c.json({ org });
  });

  app.get('/orgs/:id/members', async (c) => {
    const user = await signedIn(ctx, c);
    const members = await source.members(user, c.req.param('id'));
    if (!members) throw new WireError('not_found', 'No such organization (or you are not a member).');
    return c.json({ members });
  });

  return app;
}

/** Organizations are for signed-in users: an anonymous visitor has none. */
async function signedIn(ctx: WireContext, c: Parameters<typeof userOf>[1]) {
  const user = await userOf(ctx, c);
  if (user.kind === 'anonymous') {
    throw new WireError('principal_required', 'Sign in required: organizations are for signed-in users.');
  }
  return user;
}
