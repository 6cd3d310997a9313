import type { Hono } from 'hono';
import type { PlatformEnv } from '../context.js';

/**
 * Marks every answer under `path` (a Hono path: `/api/keys/*` covers `/api/keys` too)
 * `Cache-Control: no-store`: refusals and faults included, which the platform's error handler
 * builds after the route has thrown, so no shared cache keeps a caller's 401 or 404 either.
 */
export function noStoreOn(app: Hono<PlatformEnv>, ...paths: string[]): void {
  for (const path of paths) {
    app.use(path, async (c, next) => {
      await next();
      c.res.headers.set('cache-control', 'no-store');
    });
  }
}
