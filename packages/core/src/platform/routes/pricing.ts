import { Hono } from 'hono';
import { ModelCatalogError } from '../../catalog/pricing.js';
import { NO_STORE } from '../../http/errors.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';

/** Shared caches may keep public prices five minutes; the sidebar list may be served stale an hour while refreshed. */
const PRICE_TABLE = { 'cache-control': 'public, max-age=300' } as const;
const SIDEBAR = { 'cache-control': 'public, max-age=300, stale-while-revalidate=3600' } as const;

/**
 * `/api/pricing/*`: public prices with the margin applied. Unauthenticated: a session cookie is
 * never read, so no answer carries anything of a tenant, and none sets a cookie. Flat error
 * bodies (no-store), each route's fault message its own.
 *
 * @see docs/api/pricing.md
 */
export function pricingRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();

  app.get('/api/pricing/models', async (c) => {
    c.set('errorShape', 'flat');
    const answer = await faultAs('Internal server error', async () => {
      try {
        return await ctx.pricing.models();
      } catch (error) {
        if (error instanceof ModelCatalogError) return error;
        throw error;
      }
    });
    if (answer instanceof ModelCatalogError)
      throw new PlatformError(502, answer.message, { headers: NO_STORE });
    return c.json(answer, 200, PRICE_TABLE);
  });

  app.get('/api/pricing/integrations', async (c) => {
    c.set('errorShape', 'flat');
    const integrations = await faultAs('Failed to load pricing integrations', () =>
      ctx.pricing.integrations(),
    );
    return c.json({ integrations }, 200, SIDEBAR);
  });

  app.get('/api/pricing/public/:slug', async (c) => {
    c.set('errorShape', 'flat');
    const slug = c.req.param('slug');
    const detail = await faultAs('Failed to load pricing detail', () => ctx.pricing.detail(slug));
    if (!detail) throw new PlatformError(404, 'Not found', { headers: NO_STORE });
    return c.json(detail, 200, PRICE_TABLE);
  });

  /** A fault of `read` answers 500 with this route's own message (the log has the cause). */
  async function faultAs<T>(message: string, read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      ctx.logger.error('pricing read failed', {
        error_message: error instanceof Error ? error.message : String(error),
      });
      throw new PlatformError(500, message, { headers: NO_STORE });
    }
  }

  return app;
}
