/**
 * The two automation entry points that never call the host's `principal()`: `POST /tick` (the
 * scheduler, by bearer secret) and `POST /webhooks/:source` (standard-webhooks signatures, 1 MiB
 * cap). The automations decide; this answers: 401 for a refusal (already on the audit record),
 * 202 for a new delivery, 200 for a duplicate, 500 `raw_body_unavailable` when the adapter says
 * the body is re-serialized (a host body parser ran first): a fault of the host, not the sender.
 */
import { Hono } from 'hono';
import { WEBHOOK_BODY_CAP } from '../../automations/index.js';
import { readBody } from '../../http/body.js';
import { bearerToken } from '../../identity/bearer.js';
import type { WireContext, WireEnv } from '../context.js';
import { WireError } from '../errors.js';

export function automationRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();
  const automations = ctx.automations;
  if (!automations) return app;

  app.post('/tick', async (c) => {
    const answer = await automations.tick(bearerToken(c.req.header('authorization')));
    if (!answer) throw new WireError('unauthorized', 'The tick secret is missing or wrong.');
    return c.json(answer);
  });

  app.post('/webhooks/:source', async (c) => {
    // A signature covers the sender's bytes; re-serialized JSON would fail it as if forged.
    if ((c.env as { bodyRewritten?: boolean } | undefined)?.bodyRewritten) throw rawBodyUnavailable();
    const body = await readBody(c.req.raw, { maxBytes: WEBHOOK_BODY_CAP, tooLarge });
    const receipt = await automations.receiveWebhook(c.req.param('source'), {
      id: c.req.header('webhook-id'),
      timestamp: c.req.header('webhook-timestamp'),
      signatures: c.req.header('webhook-signature'),
      body,
    });
    if (!receipt.accepted) throw new WireError('unauthorized', 'Webhook verification failed.');
    const { id, duplicate } = receipt;
    return c.json({ accepted: true, duplicate, id }, duplicate ? 200 : 202);
  });

  return app;
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
