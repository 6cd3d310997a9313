/**
 * The two automation entry points that authenticate by their own means and never call the
 * host's `principal()`: the scheduler tick (bearer secret, constant-time) and webhook
 * deliveries (standard-webhooks HMAC-SHA256 over `id.timestamp.body`, five-minute window,
 * 1 MiB cap, delivery ids deduplicated). A rejection is 401 plus one audit event.
 *
 * @see platform-spec.md "Webhook deliveries (wire)"
 */
import { createHmac } from 'node:crypto';
import { Hono } from 'hono';
import { recordAudit } from '../../agent/audit.js';
import { readBody } from '../../http/body.js';
import { bearerToken } from '../../identity/bearer.js';
import { safeEqual } from '../../identity/keys.js';
import type { WireContext, WireEnv } from '../context.js';
import { WireError } from '../errors.js';

/** Webhook bodies larger than this are refused (413). */
export const WEBHOOK_BODY_CAP = 1024 * 1024;
/** Accepted clock difference of a delivery's timestamp. */
export const WEBHOOK_WINDOW_SECONDS = 300;

export function automationRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();
  const automations = ctx.automations;
  if (!automations) return app;

  app.post('/tick', async (c) => {
    const token = bearerToken(c.req.header('authorization'));
    const secret = automations.tickSecret;
    if (!secret || !token || !safeEqual(token, secret)) {
      await recordAudit(
        ctx.db,
        null,
        'tick.rejected',
        { reason: secret ? 'bad_secret' : 'no_secret_configured' },
        { now: true },
      );
      throw new WireError('unauthorized', 'The tick secret is missing or wrong.');
    }
    // No automation is due in this release; the answer's shape is the stable contract.
    return c.json({ fired: 0 });
  });

  app.post('/webhooks/:source', async (c) => {
    const source = c.req.param('source');
    const reject = async (reason: string) => {
      await recordAudit(
        ctx.db,
        null,
        'webhook.rejected',
        { source: source.slice(0, 64), reason },
        { now: true },
      );
      return new WireError('unauthorized', 'Webhook verification failed.');
    };
    const body = await readBody(c.req.raw, {
      maxBytes: WEBHOOK_BODY_CAP,
      tooLarge: () =>
        new WireError('payload_too_large', `Webhook bodies are capped at ${WEBHOOK_BODY_CAP} bytes.`),
    });
    const secret = automations.webhooks?.[source];
    if (!secret) throw await reject('unknown_source');
    const id = c.req.header('webhook-id');
    const timestamp = c.req.header('webhook-timestamp');
    const signatures = c.req.header('webhook-signature');
    if (!id || !timestamp || !signatures || id.length > 256) throw await reject('missing_headers');
    const seconds = Number(timestamp);
    if (!Number.isInteger(seconds) || Math.abs(Date.now() / 1000 - seconds) > WEBHOOK_WINDOW_SECONDS) {
      throw await reject('timestamp_out_of_window');
    }
    const expected = signWebhook(secret, id, seconds, body);
    const presented = signatures.split(' ').map((s) => s.trim());
    if (!presented.some((s) => safeEqual(s, expected))) throw await reject('bad_signature');
    const fresh = await ctx.db
      .insertInto('wire_webhook_deliveries')
      .values({ source, delivery_id: id })
      .onConflict((oc) => oc.columns(['source', 'delivery_id']).doNothing())
      .returning('delivery_id')
      .executeTakeFirst();
    return c.json({ accepted: true, duplicate: fresh === undefined, id }, fresh ? 202 : 200);
  });

  return app;
}

/**
 * The standard-webhooks signature `v1,<base64 HMAC-SHA256>` of `id.timestamp.body`. A secret
 * written `whsec_<base64>` is used as those bytes, any other as its UTF-8 text.
 */
export function signWebhook(
  secret: string,
  id: string,
  timestamp: number,
  body: Uint8Array | string,
): string {
  const key = secret.startsWith('whsec_')
    ? Buffer.from(secret.slice(6), 'base64')
    : Buffer.from(secret, 'utf8');
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}
