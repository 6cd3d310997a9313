import { Hono } from 'hono';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { authenticateCliRequest, NO_STORE } from './authenticate.js';

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

  app.get('/api/cli/whoami', async (c) => {
    const key = await authenticateCliRequest(ctx, c, 'cliWhoami');
    const owner = await ctx.cliKeys.describe(key);
    if (!owner) throw new PlatformError(401, 'Invalid or revoked API key', { headers: NO_STORE });
    return c.json(
      {
        tenant: owner.tenant,
        user: owner.user,
        app: owner.app,
        key: { kind: key.kind, prefix: owner.key.prefix, created_at: owner.key.createdAt.toISOString() },
      },
      200,
      NO_STORE,
    );
  });

  app.post('/api/cli/logout', async (c) => {
    const key = await authenticateCliRequest(ctx, c, 'cliLogout');
    if (key.kind !== 'cli') {
      throw new PlatformError(403, 'Only CLI keys can be revoked with logout', {
        code: 'NOT_A_CLI_KEY',
        headers: NO_STORE,
      });
    }
    await ctx.keys.revoke(key.keyId, key.tenantId);
    return c.json({ revoked: true }, 200, NO_STORE);
  });

  return app;
}
