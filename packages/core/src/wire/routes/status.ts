/**
 * `GET /status` (composition facts only, no user data) and `GET /activity` (the caller's audit
 * events). Status asks for a signed-in user outside development: its tool counts describe the
 * host's surface, which is nobody's business but its users'. In development it stays open, so
 * `service doctor` can probe a host before anyone signs in.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { wholeNumber } from '../../http/whole-number.js';
import type { WireContext, WireEnv } from '../context.js';
import { UNAVAILABLE_HEADERS } from '../errors.js';
import { principalOf, queryOf, validate } from '../request.js';

/** An activity page's `nextBefore` is an event id, a positive whole number; nothing else is one. */
const NOT_A_NEXT_BEFORE = 'must be a nextBefore';

const activityQuery = z.object({
  limit: wholeNumber(1, 200).default(50),
  before: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, NOT_A_NEXT_BEFORE)
    .transform(Number)
    .optional(),
});

export function statusRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();

  app.get('/status', async (c) => {
    if (!ctx.development) await principalOf(ctx, c);
    const storeOk = await ctx.storeHealth.ping();
    const tools = ctx.tools.enabled();
    const count = (risk: string | null) => tools.filter((t) => t.risk === risk).length;
    const body = {
      ok: storeOk,
      blocks: {
        store: { ok: storeOk, kind: ctx.storeHealth.kind },
        agent: {
          ready: ctx.model.instance !== null,
          toolOutputCap: ctx.toolOutputCap,
          historyWindow: ctx.historyWindow,
          maxOutputTokens: ctx.maxOutputTokens,
        },
        actions: {
          tools: tools.length,
          read: count('read'),
          write: count('write'),
          destructive: count('destructive'),
          ungraded: count(null),
          actAs: ctx.actAs !== null,
        },
        guard: { jsonGate: true, approvals: true, grants: true },
        apps: ctx.apps !== null,
        automations: ctx.automations
          ? {
              tick: ctx.automations.tickConfigured,
              scheduler: ctx.automations.schedulerIntervalMs ?? false,
              webhookSources: ctx.automations.webhookSources.length,
            }
          : false,
        orgs: ctx.orgs !== null,
        sandbox: false,
        model: ctx.model.source,
        mcp: ctx.mcp,
        connections: ctx.connections?.kind ?? false,
      },
    };
    return c.json(body, storeOk ? 200 : 503, {
      'cache-control': 'no-store',
      ...(storeOk ? {} : UNAVAILABLE_HEADERS),
    });
  });

  app.get('/activity', async (c) => {
    const principal = await principalOf(ctx, c);
    const query = validate(activityQuery, queryOf(c), 'query');
    // One more than the page tells whether another page follows.
    const read = await ctx.audit.list(principal.subject, {
      limit: query.limit + 1,
      ...(query.before ? { before: query.before } : {}),
    });
    const events = read.slice(0, query.limit);
    const last = events.at(-1);
    return c.json({ events, nextBefore: read.length > query.limit && last ? last.id : null });
  });

  return app;
}
