import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { NO_STORE } from '../../http/errors.js';
import { describeError } from '../../http/logger.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { optionalSession } from '../internal/session.js';

/** What a tool slug can look like; anything else is no tool at all. */
const TOOL_SLUG = /^[a-z][a-z0-9-]{1,62}[a-z0-9]$/;
const appIdSchema = z.uuid();

/**
 * The public tool catalog: the catalog and deployable lists (anonymous or signed in; platform
 * admins see every tool, uncached), one tool's detail, its usage framing and the integrations it
 * asks for.
 *
 * @see docs/api/tools.md
 */
export function toolRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const tools = ctx.tools;

  // A listing is never worth an error page: whatever fails (the store included) answers an empty
  // list, and the failure is logged.
  const listing =
    (name: string, list: (admin: boolean) => Promise<unknown[]>) => async (c: Context<PlatformEnv>) => {
      try {
        const caller = await optionalSession(ctx, c);
        const admin = caller?.admin ?? false;
        return c.json({ tools: await list(admin) }, 200, admin ? NO_STORE : {});
      } catch (error) {
        ctx.logger.error(`tool ${name} list failed`, {
          request_id: c.get('requestId'),
          ...describeError(error),
        });
        return c.json({ tools: [] }, 200, NO_STORE);
      }
    };
  app.get(
    '/api/tools/catalog',
    listing('catalog', (admin) => tools.catalog({ admin })),
  );
  app.get(
    '/api/tools/deployable',
    listing('deployable', (admin) => tools.deployable({ admin })),
  );

  app.get('/api/tools/:slug', async (c) => {
    c.set('errorShape', 'string');
    const slug = c.req.param('slug');
    if (!TOOL_SLUG.test(slug)) throw new PlatformError(404, 'Tool not found');
    const caller = await optionalSession(ctx, c);
    const tool = await tools.tool(slug, { admin: caller?.admin ?? false });
    if (!tool) throw new PlatformError(404, 'Tool not found');
    return c.json({ tool }, 200, caller?.admin ? NO_STORE : {});
  });

  app.get('/api/tools/:slug/usage-framing', async (c) => {
    c.set('errorShape', 'string');
    const slug = c.req.param('slug');
    const amounts = TOOL_SLUG.test(slug) ? await tools.usageFraming(slug) : null;
    if (!amounts) throw new PlatformError(404, 'tool_not_found');
    return c.json({ amounts });
  });

  app.get('/api/tools/:slug/integrations', async (c) => {
    const slug = c.req.param('slug');
    const appIdParam = c.req.query('appId');
    if (appIdParam !== undefined && !appIdSchema.safeParse(appIdParam).success) {
      throw new PlatformError(400, 'appId must be a UUID');
    }
    if (!TOOL_SLUG.test(slug)) return c.json({ required: [], optional: [] }, 200, NO_STORE);
    const caller = await optionalSession(ctx, c);
    const requirements = await tools.integrationRequirements(slug, {
      admin: caller?.admin ?? false,
      tenantId: caller?.tenantId ?? null,
      ...(appIdParam !== undefined ? { appId: appIdParam } : {}),
    });
    // Per caller: never shared by a cache.
    return c.json(requirements, 200, NO_STORE);
  });

  return app;
}
