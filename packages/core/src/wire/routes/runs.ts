/**
 * Runs: `GET /runs` (those the caller may see, newest first; filters `thread`, `automation`,
 * `owner`, `status`; cursor pagination), `GET /runs/:id`, `GET /runs/:id/stream` (what it
 * streamed, from any point), `POST /runs/:id/stop` (the
 * cooperative, idempotent stop) and `POST /runs/:id/rerun` (an automation's run again). A caller
 * sees the runs that ran as them and those that answer to them (an automation's runs, also the
 * ones a webhook delivery ran as `service:webhook:<source>`); any other is a 404. Mounted with
 * the automations (the wire's contract: "mounted unless automations are disabled"); without them a turn is
 * stopped through its thread, and these paths are the ordinary 404 of an unmounted family.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { isIdOf } from '../../agent/ids.js';
import { wholeNumber } from '../../http/whole-number.js';
import type { WireContext, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { noFields, pageCursor, principalOf, queryOf, validate } from '../request.js';
import { follow, streamCursor } from './chat.js';

const listQuery = z.object({
  thread: z.string().max(64).optional(),
  automation: z.string().max(64).optional(),
  owner: z.string().max(256).optional(),
  status: z.enum(['running', 'awaiting_approval', 'completed', 'failed', 'cancelled']).optional(),
  cursor: pageCursor((id) => isIdOf('run', id), 'nextCursor').optional(),
  limit: wholeNumber(1, 100).default(50),
});

export function runRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();
  const automations = ctx.automations;
  if (!automations) return app;

  app.get('/runs', async (c) => {
    const principal = await principalOf(ctx, c);
    const query = validate(listQuery, queryOf(c), 'query');
    const page = await ctx.runs.listRuns(principal.subject, {
      limit: query.limit,
      ...(query.thread ? { threadId: query.thread } : {}),
      ...(query.automation ? { automationId: query.automation } : {}),
      ...(query.owner ? { owner: query.owner } : {}),
      ...(query.status ? { status: query.status } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
    return c.json({ runs: page.items, nextCursor: page.nextCursor });
  });

  app.get('/runs/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    const run = await ctx.runs.getRun(principal.subject, c.req.param('id'));
    if (!run) throw notFound();
    return c.json({ run });
  });

  // Any run the caller may see, from its start or a cursor, finished or not: how the owner of a
  // webhook automation reads what its run (which ran as the service) said.
  app.get('/runs/:id/stream', async (c) => {
    const principal = await principalOf(ctx, c);
    const after = streamCursor(c) ?? 0;
    const run = await ctx.runs.getRun(principal.subject, c.req.param('id'));
    if (!run) throw notFound();
    return follow(ctx, c, run.id, run.threadId, after);
  });

  app.post('/runs/:id/stop', async (c) => {
    const principal = await principalOf(ctx, c);
    await noFields(c);
    const run = await ctx.runs.stop(principal.subject, c.req.param('id'));
    if (!run) throw notFound();
    return c.json({ run }, 202);
  });

  app.post('/runs/:id/rerun', async (c) => {
    const principal = await principalOf(ctx, c);
    await noFields(c);
    const outcome = await automations.rerun(principal.subject, c.req.param('id'));
    if ('run' in outcome) return c.json({ run: outcome.run }, 202);
    if (outcome.refused === 'not_found') throw notFound();
    if (outcome.refused === 'automation_deleted')
      throw new WireError(
        'not_rerunnable',
        "This run's automation was deleted; a deleted automation runs no more.",
      );
    throw new WireError(
      'not_rerunnable',
      'Only an automation\'s runs can be rerun; to answer a chat message again, regenerate it (POST /chat with trigger "regenerate-message").',
    );
  });

  return app;
}

function notFound(): WireError {
  return new WireError('not_found', 'No such run.');
}
