import { Hono } from 'hono';
import { flatError } from '../../http/errors.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { authenticateCliRequest } from './authenticate.js';

/**
 * What `service whoami` and `service logout` call, authenticated by the stored key.
 *
 * - `GET /api/cli/whoami`: the key's tenant, its user (CLI keys) or app (App Keys), and the key's
 *   kind and display prefix. The balance comes from `GET /api/cli/balance`.
 * - `POST /api/cli/logout`: the presented CLI key revokes itself. Other key kinds are refused, so
 *   a deployment's App Key cannot be revoked by mistake from a terminal.
 *
 * Flat errors, like `/api/cli/balance`.
 *
 * @see docs/cli.md "Platform endpoints"
 */
export function accountRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const noStore = { 'cache-control': 'no-store' };

  app.get('/api/cli/whoami', async (c) => {
    const key = await authenticateCliRequest(ctx, c, 'cliWhoami');
    if (key instanceof Response) return key;
    const [tenant, row, user, deployment] = await Promise.all([
      ctx.db.selectFrom('tenants').select(['id', 'name']).where('id', '=', key.tenantId).executeTakeFirst(),
      ctx.db
        .selectFrom('api_keys')
        .select(['prefix', 'created_at'])
        .where('id', '=', key.keyId)
        .where('tenant_id', '=', key.tenantId)
        .executeTakeFirst(),
      key.userId
        ? ctx.db.selectFrom('users').select(['email', 'name']).where('id', '=', key.userId).executeTakeFirst()
        : undefined,
      key.appId
        ? ctx.db
            .selectFrom('apps')
            .select(['id', 'slug', 'name'])
            .where('id', '=', key.appId)
            .where('tenant_id', '=', key.tenantId)
            .executeTakeFirst()
        : undefined,
    ]);
    if (!tenant || !row) return flatError(401, 'Invalid or revoked API key', {}, noStore);
    return c.json(
      {
        tenant: { id: tenant.id, name: tenant.name },
        user: user ? { email: user.email, name: user.name } : null,
        app: deployment ?? null,
        key: { kind: key.kind, prefix: row.prefix, created_at: row.created_at.toISOString() },
      },
      200,
      noStore,
    );
  });

  app.post('/api/cli/logout', async (c) => {
    const key = await authenticateCliRequest(ctx, c, 'cliLogout');
    if (key instanceof Response) return key;
    if (key.kind !== 'cli') {
      return flatError(403, 'Only CLI keys can be revoked with logout', { code: 'NOT_A_CLI_KEY' }, noStore);
    }
    await ctx.keys.revoke(key.keyId, key.tenantId);
    return c.json({ revoked: true }, 200, noStore);
  });

  return app;
}
