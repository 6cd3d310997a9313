import { describe, expect, it } from 'vitest';
import { checkWebhook, signWebhook, WEBHOOK_WINDOW_SECONDS } from './webhooks.js';

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
