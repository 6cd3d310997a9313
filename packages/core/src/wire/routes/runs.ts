/**
 * Runs: `GET /runs` (the caller's, newest first; `?thread=`), `GET /runs/:id`, and
 * `POST /runs/:id/stop`, the cooperative, idempotent stop. Mounted with the automations (the
 * spec's "mounted unless automations are disabled"); without them a turn is stopped through its
 * thread, and these paths are the ordinary 404 of an unmounted family.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { WireContext, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { principalOf, queryOf, validate } from '../request.js';

const listQuery = z.object({
  thread: z.string().max(64).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
});

export function runRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();
  if (!ctx.automations) return app;

  app.get('/runs', async (c) => {
    const principal = await principalOf(ctx, c);
    const query = validate(listQuery, queryOf(c), 'query');
    const runs = await ctx.runs.listRuns(principal.subject, {
      limit: query.limit,
      ...(query.thread ? { threadId: query.thread } : {}),
    });
    return c.json({ runs });
  });

  app.get('/runs/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    const run = await ctx.runs.getRun(principal.subject, c.req.param('id'));
    if (!run) throw new WireError('not_found', 'No such run.');
    return c.json({ run });
  });

  app.post('/runs/:id/stop', async (c) => {
    const principal = await principalOf(ctx, c);
    const run = await ctx.runs.stop(principal.subject, c.req.param('id'));
    if (!run) throw new WireError('not_found', 'No such run.');
    return c.json({ run }, 202);
  });

  return app;
}
