import { describe, expect, it } from 'vitest';
import {
  checkGithubWebhook,
  checkStripeWebhook,
  checkWebhook,
  signGithubWebhook,
  signStripeWebhook,
  signWebhook,
  WEBHOOK_WINDOW_SECONDS,
} from './webhooks.js';

const SECRET = 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=';
const body = new TextEncoder().encode('{"action":"opened"}');
const now = 1_800_000_000_000;
const at = now / 1000;

function delivery(overrides: Partial<Parameters<typeof checkWebhook>[1]> = {}) {
  return {
    id: 'msg_1',
    timestamp: String(at),
    signatures: signWebhook(SECRET, 'msg_1', at, body),
    body,
    ...overrides,
  };
}

describe('checkWebhook', () => {
  it('accepts a delivery signed with the secret, among other signatures (a rotated secret)', () => {
    expect(checkWebhook(SECRET, delivery(), now)).toBeNull();
    const both = `v1,bm90LWl0 ${signWebhook(SECRET, 'msg_1', at, body)}`;
    expect(checkWebhook(SECRET, delivery({ signatures: both }), now)).toBeNull();
  });

  it('names why it refuses a delivery', () => {
    expect(checkWebhook(SECRET, delivery({ id: undefined }), now)).toBe('missing_headers');
    expect(checkWebhook(SECRET, delivery({ id: 'x'.repeat(257) }), now)).toBe('missing_headers');
    const late = now + (WEBHOOK_WINDOW_SECONDS + 1) * 1000;
    expect(checkWebhook(SECRET, delivery(), late)).toBe('timestamp_out_of_window');
    expect(checkWebhook(SECRET, delivery({ timestamp: 'soon' }), now)).toBe('timestamp_out_of_window');
    expect(checkWebhook('another-secret-of-length', delivery(), now)).toBe('bad_signature');
    expect(checkWebhook(SECRET, delivery({ body: new TextEncoder().encode('{}') }), now)).toBe(
      'bad_signature',
    );
  });
});

describe('checkGithubWebhook', () => {
  const secret = 'github-secret-0123456789';
  it("accepts GitHub's sha256= signature of the raw body and names why it refuses", () => {
    const signature = signGithubWebhook(secret, body);
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(checkGithubWebhook(secret, { id: 'd-1', signature, body })).toBeNull();
    expect(checkGithubWebhook(secret, { id: undefined, signature, body })).toBe('missing_headers');
    expect(checkGithubWebhook(secret, { id: 'd-1', signature: undefined, body })).toBe('missing_headers');
    expect(checkGithubWebhook('another-secret-0123', { id: 'd-1', signature, body })).toBe('bad_signature');
    const other = new TextEncoder().encode('{"action":"closed"}');
    expect(checkGithubWebhook(secret, { id: 'd-1', signature, body: other })).toBe('bad_signature');
  });
});

describe('checkStripeWebhook', () => {
  const secret = 'whsec_stripe0123456789';
  const event = new TextEncoder().encode('{"id":"evt_1","type":"invoice.paid"}');
  it('accepts a t=,v1= signature within the window and takes the event id from the body', () => {
    const signature = signStripeWebhook(secret, at, event);
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(checkStripeWebhook(secret, { signature, body: event }, now)).toEqual({ id: 'evt_1' });
    // A rolled secret: Stripe sends one v1 per secret.
    const both = `${signature},v1=${'0'.repeat(64)}`;
    expect(checkStripeWebhook(secret, { signature: both, body: event }, now)).toEqual({ id: 'evt_1' });
  });

  it('names why it refuses a delivery', () => {
    const signature = signStripeWebhook(secret, at, event);
    const late = now + (WEBHOOK_WINDOW_SECONDS + 1) * 1000;
    expect(checkStripeWebhook(secret, { signature, body: event }, late)).toEqual({
      rejection: 'timestamp_out_of_window',
    });
    expect(checkStripeWebhook(secret, { signature: undefined, body: event }, now)).toEqual({
      rejection: 'missing_headers',
    });
    expect(checkStripeWebhook(secret, { signature: `t=${at}`, body: event }, now)).toEqual({
      rejection: 'missing_headers',
    });
    expect(checkStripeWebhook('whsec_another0123456', { signature, body: event }, now)).toEqual({
      rejection: 'bad_signature',
    });
    const noId = new TextEncoder().encode('{"type":"invoice.paid"}');
    const signedNoId = signStripeWebhook(secret, at, noId);
    expect(checkStripeWebhook(secret, { signature: signedNoId, body: noId }, now)).toEqual({
      rejection: 'missing_headers',
    });
  });
});
