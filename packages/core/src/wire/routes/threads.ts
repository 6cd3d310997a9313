/**
 * Threads: `GET /threads` (summaries, titles from the stored column), `GET /threads/:id`
 * (with its messages), `POST /threads/:id/stop` (stops its run in flight: a useChat client knows
 * its chat id, not always the run's), `DELETE /threads/:id` (stops its run first).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { CLIENT_ID_PATTERN } from '../../agent/ids.js';
import { wholeNumber } from '../../http/whole-number.js';
import type { WireContext, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { noFields, principalOf, queryOf, validate } from '../request.js';

/** The instants the store holds: years 0001 to 9999 in UTC (it has no year 0, 1 BC). */
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00.000Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/** A date-time (any offset) whose instant the store can compare with, read in UTC. */
function isStorableDateTime(value: string): boolean {
  if (!z.iso.datetime({ offset: true }).safeParse(value).success) return false;
  const at = Date.parse(value);
  return at >= FIRST_INSTANT && at <= LAST_INSTANT;
}

/**
 * A page's `nextBefore`: the last thread's `updatedAt` and id, as `<updatedAt>~<id>` (ids never
 * hold `~`). `?before=` takes it, or an `updatedAt` alone.
 */
const beforeSchema = z
  .string()
  .max(120)
  .transform((value, ctx) => {
    const [updatedAt = '', id, ...rest] = value.split('~');
    const valid =
      isStorableDateTime(updatedAt) && (id === undefined || CLIENT_ID_PATTERN.test(id)) && rest.length === 0;
    if (!valid) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be a nextBefore, or an ISO date-time of the years 0001 to 9999',
      });
      return z.NEVER;
    }
    return id === undefined ? { updatedAt } : { updatedAt, id };
  });

const listQuery = z.object({
  limit: wholeNumber(1, 100).default(50),
  before: beforeSchema.optional(),
});

export function threadRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();

  app.get('/threads', async (c) => {
    const principal = await principalOf(ctx, c);
    const query = validate(listQuery, queryOf(c), 'query');
    // One more than the page tells whether another page follows.
    const read = await ctx.threads.list(principal.subject, {
      limit: query.limit + 1,
      ...(query.before ? { before: query.before } : {}),
    });
    const threads = read.slice(0, query.limit);
    const last = threads.at(-1);
    return c.json({
      threads,
      nextBefore: read.length > query.limit && last ? `${last.updatedAt}~${last.id}` : null,
    });
  });

  app.get('/threads/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    const thread = await ctx.threads.get(principal.subject, c.req.param('id'));
    if (!thread) throw new WireError('not_found', 'No such thread.');
    const run = await ctx.runs.latestRun(principal.subject, thread.id);
    return c.json({ thread: { ...thread, latestRun: run } });
  });

  app.post('/threads/:id/stop', async (c) => {
    const principal = await principalOf(ctx, c);
    await noFields(c);
    const id = c.req.param('id');
    if (!(await ctx.threads.exists(principal.subject, id)))
      throw new WireError('not_found', 'No such thread.');
    const run = await ctx.runs.stopInFlight(principal.subject, id);
    return run ? c.json({ run }, 202) : c.json({ run: null }, 200);
  });

  app.delete('/threads/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    await noFields(c);
    const id = c.req.param('id');
    if (!(await ctx.threads.exists(principal.subject, id)))
      throw new WireError('not_found', 'No such thread.');
    await ctx.runs.stopThread(principal.subject, id, 'thread_deleted');
    // Deletes racing past the check above (each waits for the run to stop): only the one whose
    // statement removed the thread answers for it, so it is deleted and recorded once.
    if (!(await ctx.threads.delete(principal.subject, id)))
      throw new WireError('not_found', 'No such thread.');
    ctx.audit.record(principal.subject, 'thread.deleted', { threadId: id });
    return c.json({ deleted: true, id });
  });

  return app;
}
