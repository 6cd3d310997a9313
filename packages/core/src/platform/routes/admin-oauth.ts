import { type Context, Hono } from 'hono';
import { oauthClientInputSchema } from '../../connections/oauth-clients.js';
import { NO_STORE } from '../../http/errors.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { readJsonBody } from '../internal/json-body.js';
import { requireSafeCookieWrite, requireSession, type SessionCaller } from '../internal/session.js';

/**
 * The OAuth client of a connector integration, set by platform admins: read (never the secret),
 * set (`PUT`; an omitted `clientSecret` keeps the stored one) and remove. Camel-case bodies, flat
 * error bodies; 404 for an unknown integration, 400 for one that is not a connector, 409 for one
 * whose client comes from `SERVICE_OAUTH_CLIENTS`.
 *
 * @see docs/api/oauth.md "Client configuration"
 */
export function adminOAuthRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const clients = ctx.oauthClients;

  const adminOf = async (c: Context<PlatformEnv>): Promise<SessionCaller> => {
    const user = await requireSession(ctx, c);
    if (!user.email || !ctx.adminEmails.has(user.email.toLowerCase())) {
      throw new PlatformError(403, 'Forbidden: platform admins only', { code: 'FORBIDDEN' });
    }
    return user;
  };
  const notConfigured = () =>
    new PlatformError(404, 'No OAuth client is configured for this integration', { code: 'NOT_FOUND' });

  app.get('/api/admin/integrations/:slug/oauth', async (c) => {
    await adminOf(c);
    const client = await clients.view(c.req.param('slug'));
    if (!client) throw notConfigured();
    return c.json({ client }, 200, NO_STORE);
  });

  app.put('/api/admin/integrations/:slug/oauth', async (c) => {
    const admin = await adminOf(c);
    requireSafeCookieWrite(ctx, c);
    const body = await readJsonBody(c, oauthClientInputSchema);
    const client = await clients.put(c.req.param('slug'), body, admin.email);
    return c.json({ client }, 200, NO_STORE);
  });

  app.delete('/api/admin/integrations/:slug/oauth', async (c) => {
    await adminOf(c);
    requireSafeCookieWrite(ctx, c);
    if (!(await clients.remove(c.req.param('slug')))) throw notConfigured();
    return c.json({ removed: true }, 200, NO_STORE);
  });

  return app;
}
