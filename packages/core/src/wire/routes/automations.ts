/**
 * Automations: the records (`/automations*`, the signed-in user's own: another user's is a 404)
 * and the two entry points that never call the host's `principal()`: `POST /tick` (the
 * scheduler, by bearer secret) and `POST /webhooks/:source` (the source's own signature, 1 MiB
 * cap). The automations decide; this answers: 401 for a refusal (already on the audit record),
 * 202 for a new delivery, 200 for a duplicate, 400 for a verified delivery whose id is not clean text, 500 `raw_body_unavailable` when the adapter says
 * the body is re-serialized (a host body parser ran first): a fault of the host, not the sender.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { isIdOf } from '../../agent/ids.js';
import {
  type Automations,
  type AutomationTrigger,
  scheduleProblem,
  WEBHOOK_BODY_CAP,
} from '../../automations/index.js';
import { readBody } from '../../http/body.js';
import { wholeNumber } from '../../http/whole-number.js';
import { bearerToken } from '../../identity/bearer.js';
import type { WireContext, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { jsonBody, noFields, pageCursor, principalOf, queryOf, validate } from '../request.js';

/** The headers a delivery's verification may read (each scheme picks its own). */
const DELIVERY_HEADERS = [
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'x-github-delivery',
  'x-hub-signature-256',
  'stripe-signature',
] as const;

const trigger = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('schedule'),
    cron: z.string().min(1).max(200),
    timezone: z.string().min(1).max(64).default('UTC'),
  }),
  z.strictObject({ type: z.literal('webhook'), source: z.string().min(1).max(64) }),
]);
const name = z.string().trim().min(1).max(200);
const prompt = z.string().trim().min(1).max(8000);
const createBody = z.strictObject({ name, prompt, trigger });
const updateBody = z
  .strictObject({ name: name.optional(), prompt: prompt.optional(), trigger: trigger.optional() })
  .refine((b) => Object.keys(b).length > 0, 'name, prompt or trigger is required');
const listQuery = z.object({
  limit: wholeNumber(1, 100).default(50),
  cursor: pageCursor((id) => isIdOf('atm', id), 'nextCursor').optional(),
});

export function automationRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();
  const automations = ctx.automations;
  if (!automations) return app;

  app.post('/automations', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, createBody);
    checkTrigger(automations, body.trigger);
    const automation = await automations.records.create(principal, body);
    ctx.audit.record(principal.subject, 'automation.created', { automationId: automation.id });
    return c.json({ automation }, 201);
  });

  app.get('/automations', async (c) => {
    const principal = await principalOf(ctx, c);
    const query = validate(listQuery, queryOf(c), 'query');
    const page = await automations.records.list(principal.subject, {
      limit: query.limit,
      ...(query.cursor ? { cursor: query.cursor } : {}),
    });
    return c.json({ automations: page.items, nextCursor: page.nextCursor });
  });

  app.get('/automations/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    const automation = await automations.records.get(principal.subject, c.req.param('id'));
    if (!automation) throw notFound();
    return c.json({ automation });
  });

  app.patch('/automations/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    const body = await jsonBody(ctx, c, updateBody);
    if (body.trigger) checkTrigger(automations, body.trigger);
    const automation = await automations.records.update(principal, c.req.param('id'), body);
    if (!automation) throw notFound();
    return c.json({ automation });
  });

  for (const [action, status] of [
    ['pause', 'paused'],
    ['resume', 'active'],
  ] as const) {
    app.post(`/automations/:id/${action}`, async (c) => {
      const principal = await principalOf(ctx, c);
      await noFields(c);
      const outcome = await automations.records.setStatus(principal.subject, c.req.param('id'), status);
      if (!outcome) throw notFound();
      // Idempotent: a repeat (or the loser of a race) answers the same and records nothing.
      if (outcome.changed) {
        ctx.audit.record(principal.subject, `automation.${action}d`, { automationId: outcome.automation.id });
      }
      return c.json({ automation: outcome.automation });
    });
  }

  app.delete('/automations/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    await noFields(c);
    const id = c.req.param('id');
    if (!(await automations.records.delete(principal.subject, id))) throw notFound();
    ctx.audit.record(principal.subject, 'automation.deleted', { automationId: id });
    return c.json({ deleted: true, id });
  });

  app.post('/tick', async (c) => {
    const answer = await automations.tick(bearerToken(c.req.header('authorization')));
    if (!answer) throw new WireError('unauthorized', 'The tick secret is missing or wrong.');
    return c.json(answer);
  });

  app.post('/webhooks/:source', async (c) => {
    // A signature covers the sender's bytes; re-serialized JSON would fail it as if forged.
    if ((c.env as { bodyRewritten?: boolean } | undefined)?.bodyRewritten) throw rawBodyUnavailable();
    const body = await readBody(c.req.raw, { maxBytes: WEBHOOK_BODY_CAP, tooLarge });
    const headers = Object.fromEntries(DELIVERY_HEADERS.map((name) => [name, c.req.header(name)]));
    const receipt = await automations.receiveWebhook(c.req.param('source'), { headers, body });
    if (!receipt.accepted) {
      if (receipt.problem)
        throw new WireError('validation_failed', `${receipt.problem}: it cannot be remembered.`);
      throw new WireError('unauthorized', 'Webhook verification failed.');
    }
    const { id, duplicate, runs } = receipt;
    return c.json({ accepted: true, duplicate, id, runs }, duplicate ? 200 : 202);
  });

  return app;
}

/** A schedule croner can read in a real time zone; a webhook source the composition verifies. */
function checkTrigger(automations: Automations, given: AutomationTrigger): void {
  if (given.type === 'schedule') {
    const problem = scheduleProblem(given);
    if (problem)
      throw new WireError('validation_failed', `body.trigger.${problem.field}: ${problem.message}`);
    return;
  }
  if (!automations.webhookSources.includes(given.source)) {
    throw new WireError(
      'validation_failed',
      `body.trigger.source: ${JSON.stringify(given.source)} is not a webhook source of this service ` +
        '(the host names its sources in createService({ automations: { webhooks } }))',
    );
  }
}

function notFound(): WireError {
  return new WireError('not_found', 'No such automation.');
}

function rawBodyUnavailable(): WireError {
  return new WireError(
    'raw_body_unavailable',
    'The webhook cannot be verified: a body parser read it before the service and its original ' +
      'bytes are gone. Mount the service before any body parser, or keep the bytes ' +
      '(express.json({ verify: (req, _res, buf) => { req.rawBody = buf; } })).',
  );
}

function tooLarge(): WireError {
  return new WireError('payload_too_large', `Webhook bodies are capped at ${WEBHOOK_BODY_CAP} bytes.`);
}
