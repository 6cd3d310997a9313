/**
 * Webhook deliveries and their signature schemes: self-minted ones as standard-webhooks signs
 * them (HMAC-SHA256 over `id.timestamp.body`, accepted within five minutes of their timestamp),
 * and connector sources with their own signed headers (GitHub's `X-Hub-Signature-256`,
 * Stripe's `Stripe-Signature`).
 */
import { createHmac } from 'node:crypto';
import { safeEqual } from '../identity/keys.js';

/** Webhook bodies larger than this are refused. */
export const WEBHOOK_BODY_CAP = 1024 * 1024;
/** Accepted clock difference of a delivery's timestamp. */
export const WEBHOOK_WINDOW_SECONDS = 300;

/** A delivery as it arrived: its `webhook-*` headers (absent ones undefined) and its body. */
export interface WebhookDelivery {
  id: string | undefined;
  timestamp: string | undefined;
  /** `webhook-signature`: one or more signatures, space separated (a rotated secret signs twice). */
  signatures: string | undefined;
  body: Uint8Array;
}

/** Why a delivery was refused, as its audit event says. */
export type WebhookRejection = 'missing_headers' | 'timestamp_out_of_window' | 'bad_signature';

/** Null when the delivery is signed with `secret` within the window; else why not. */
export function checkWebhook(
  secret: string,
  delivery: WebhookDelivery,
  nowMs: number = Date.now(),
): WebhookRejection | null {
  const { id, timestamp, signatures } = delivery;
  if (!id || !timestamp || !signatures || id.length > 256) return 'missing_headers';
  const seconds = Number(timestamp);
  if (!Number.isInteger(seconds) || Math.abs(nowMs / 1000 - seconds) > WEBHOOK_WINDOW_SECONDS) {
    return 'timestamp_out_of_window';
  }
  const expected = signWebhook(secret, id, seconds, delivery.body);
  const presented = signatures.split(' ').map((s) => s.trim());
  return presented.some((s) => safeEqual(s, expected)) ? null : 'bad_signature';
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

/**
 * A source's verification, as the composition registers it: a secret alone is a self-minted
 * (standard-webhooks) source; `{ scheme: 'github' | 'stripe', secret }` verifies that
 * connector's own headers.
 */
export type WebhookSource = string | { scheme: WebhookScheme; secret: string };

export const WEBHOOK_SCHEMES = ['standard-webhooks', 'github', 'stripe'] as const;
export type WebhookScheme = (typeof WEBHOOK_SCHEMES)[number];

/** A GitHub delivery: `X-GitHub-Delivery`, `X-Hub-Signature-256` and the body. */
export interface GithubDelivery {
  id: string | undefined;
  signature: string | undefined;
  body: Uint8Array;
}

/**
 * Null when `X-Hub-Signature-256` is `sha256=<hex HMAC-SHA256 of the body>` under `secret`.
 * GitHub signs no timestamp, so there is no clock window: a replay is caught by its delivery id.
 */
export function checkGithubWebhook(secret: string, delivery: GithubDelivery): WebhookRejection | null {
  const { id, signature } = delivery;
  if (!id || !signature || id.length > 256) return 'missing_headers';
  return safeEqual(signature.trim(), signGithubWebhook(secret, delivery.body)) ? null : 'bad_signature';
}

/** GitHub's `X-Hub-Signature-256` value for `body`. */
export function signGithubWebhook(secret: string, body: Uint8Array | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * A Stripe delivery: `Stripe-Signature: t=<seconds>,v1=<hex HMAC-SHA256 of "t.body">[,v1=...]`
 * under the endpoint secret (its text, `whsec_` included), within five minutes of `t`. The
 * delivery id is the event's own `id` in the body, read once the signature holds.
 */
export function checkStripeWebhook(
  secret: string,
  delivery: { signature: string | undefined; body: Uint8Array },
  nowMs: number = Date.now(),
): { id: string } | { rejection: WebhookRejection } {
  const fields = (delivery.signature ?? '').split(',').map((part) => part.trim().split('='));
  const timestamp = fields.find(([key]) => key === 't')?.[1];
  const presented = fields.filter(([key]) => key === 'v1').map(([, value]) => value ?? '');
  if (!timestamp || presented.length === 0) return { rejection: 'missing_headers' };
  const seconds = Number(timestamp);
  if (!Number.isInteger(seconds) || Math.abs(nowMs / 1000 - seconds) > WEBHOOK_WINDOW_SECONDS) {
    return { rejection: 'timestamp_out_of_window' };
  }
  const expected = signStripeWebhook(secret, seconds, delivery.body).split('v1=')[1] ?? '';
  if (!presented.some((value) => safeEqual(value, expected))) return { rejection: 'bad_signature' };
  const id = eventIdOf(delivery.body);
  return id ? { id } : { rejection: 'missing_headers' };
}

/** Stripe's `Stripe-Signature` value for `body` at `timestamp` (seconds). */
export function signStripeWebhook(secret: string, timestamp: number, body: Uint8Array | string): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  return `t=${timestamp},v1=${mac}`;
}

function eventIdOf(body: Uint8Array): string | null {
  try {
    const id = (JSON.parse(new TextDecoder().decode(body)) as { id?: unknown }).id;
    return typeof id === 'string' && id.length > 0 && id.length <= 256 ? id : null;
  } catch {
    return null;
  }
}
