/**
 * Development-only routes (no principal): the doctor probes and `/sync/impact`. In any
 * composition not in development mode they answer the ordinary 404, except
 * `GET /doctor/base-url`, which answers everywhere and reveals only whether the base URL is set.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { WireContext, WireEnv } from '../context.js';
import { jsonBody } from '../request.js';

const impactBody = z.strictObject({ tools: z.array(z.string().min(1).max(64)).max(500).optional() });

export function developmentRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();

  app.get('/doctor/base-url', (c) => c.json({ set: ctx.baseUrlSet }, 200, { 'cache-control': 'no-store' }));

  if (!ctx.development) return app;

  app.post('/doctor/present', (c) =>
    c.json({
      authorization: c.req.header('authorization') !== undefined,
      cookie: c.req.header('cookie') !== undefined,
      forwarding: ctx.baseUrlSet,
    }),
  );

  app.post('/doctor/act-as', (c) => c.json({ configured: ctx.actAs !== null }));

  app.post('/sync/impact', async (c) => {
    const body = await jsonBody(ctx, c, impactBody);
    const names = body.tools ?? ctx.tools.all().map((t) => t.name);
    const grants = await ctx.grants.countByTool(names);
    const apps = ctx.apps ? await ctx.apps.store.countByTool(names) : new Map<string, number>();
    // An automation saves a free-text prompt, not the tools it will call, so it cannot be counted:
    // it stays 0 (docs/framework-cli.md).
    const tools = names.map((name) => ({
      name,
      known: ctx.tools.get(name) !== undefined,
      apps: apps.get(name) ?? 0,
      automations: 0,
      grants: grants.get(name) ?? 0,
    }));
    const sum = (pick: (t: (typeof tools)[number]) => number) => tools.reduce((n, t) => n + pick(t), 0);
    return c.json({
      tools,
      totals: {
        apps: sum((t) => t.apps),
        automations: sum((t) => t.automations),
        grants: sum((t) => t.grants),
      },
    });
  });

  return app;
}
