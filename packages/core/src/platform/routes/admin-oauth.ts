import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { NO_STORE } from '../../http/errors.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { readJsonBody } from '../internal/json-body.js';
import { requireSafeCookieWrite, requireSession, type SessionCaller } from '../internal/session.js';

/** https anywhere; plain http only to this machine (local providers, tests). */
const endpoint = z
  .url({ protocol: /^https?$/ })
  .max(2048)
  .refine((value) => {
    const url = new URL(value);
    return (
      url.protocol === 'https:' ||
      url.hostname === 'localhost' ||
      url.hostname === '127.0.0.1' ||
      url.hostname === '[::1]'
    );
  }, 'must be an https URL (plain http only on localhost)')
  .refine((value) => !new URL(value).hash && !new URL(value).username, 'must have no fragment or userinfo');

const RESERVED_PARAMS = new Set([
  'response_type',
  'client_id',
  'redirect_uri',
  'state',
  'scope',
  'code_challenge',
  'code_challenge_method',
]);

const clientSchema = z.strictObject({
  authorizeUrl: endpoint,
  tokenUrl: endpoint,
  revocationUrl: endpoint.nullable().optional(),
  clientId: z.string().min(1).max(512),
  clientSecret: z.string().min(1).max(4096).nullable().optional(),
  scopes: z
    .array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]{1,256}$/, 'must be an OAuth scope token'))
    .max(100)
    .optional(),
  authorizeParams: z
    .record(z.string().min(1).max(100), z.string().max(1000))
    .refine((params) => Object.keys(params).length <= 20, 'must have at most 20 parameters')
    .refine(
      (params) => Object.keys(params).every((name) => !RESERVED_PARAMS.has(name)),
      'must not set a parameter the flow sets itself (state, redirect_uri, ...)',
    )
    .optional(),
  pkce: z.boolean().optional(),
  tokenAuthMethod: z.enum(['client_secret_basic', 'client_secret_post', 'none']).optional(),
});

/**
 * The OAuth client of a connector integration, set by platform admins: read (never the secret),
 * set (`PUT`; an omitted `clientSecret` keeps the stored one) and remove. Camel-case bodies, flat
 * error bodies; 404 for an unknown integration, 400 for one that is not a connector.
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
    const body = await readJsonBody(c, clientSchema);
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
