/**
 * RFC 6749 §2.3: a client uses one authentication method per request. At the service-key
 * exchange, HTTP Basic and a `client_secret` in the form together are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';

const SERVICE_KEY = `mcp_svc_${'b'.repeat(43)}`;

let store: TestStore;
let host: DoorHost;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store, { mcp: { serviceAuth: { keys: [SERVICE_KEY] } } });
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

const exchange = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${host.url}/api/service/mcp/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: 'user-9',
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      ...fields,
    }),
  });

describe('client authentication methods', () => {
  const basic = { authorization: `Basic ${Buffer.from(`service:${SERVICE_KEY}`).toString('base64')}` };

  it('§2.3 HTTP Basic and client_secret in one request are refused (400 invalid_request)', async () => {
    const both = await exchange({ client_id: 'service', client_secret: SERVICE_KEY }, basic);
    expect(both.status).toBe(400);
    expect(await both.json()).toEqual({
      error: 'invalid_request',
      error_description: 'Use one client authentication method: HTTP Basic or client_secret',
    });
  });

  it('§2.3.1 either method alone authenticates', async () => {
    expect((await exchange({}, basic)).status).toBe(200);
    expect((await exchange({ client_id: 'service', client_secret: SERVICE_KEY })).status).toBe(200);
  });
});
