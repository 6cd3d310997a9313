/**
 * RFC 6749 §2.3: a client uses one authentication method per request. At the service-key
 * exchange, HTTP Basic and a `client_secret` in the form together are refused. Basic credentials
 * that do not decode are refused too (§5.2 `invalid_request`), at `/token` and `/revoke`, never
 * passed over for the form's `client_id`.
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

describe('malformed HTTP Basic credentials', () => {
  const malformed = {
    'not base64': 'Basic !!!',
    'no colon': `Basic ${Buffer.from('service').toString('base64')}`,
    'no user': `Basic ${Buffer.from(`:${SERVICE_KEY}`).toString('base64')}`,
    'a broken percent-encoding': `Basic ${Buffer.from('x%ZZ:').toString('base64')}`,
    'nothing after the scheme': 'Basic',
  };

  it.each(Object.entries(malformed))('§5.2 are refused at /token: %s', async (_, authorization) => {
    const answer = await exchange({ client_id: 'service', client_secret: SERVICE_KEY }, { authorization });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({
      error: 'invalid_request',
      error_description:
        'HTTP Basic credentials must be the base64 of "<client_id>:<secret>", each form-encoded',
    });
  });

  it('§5.2 are refused at /revoke, though the form names a client', async () => {
    const answer = await fetch(`${host.url}/api/service/mcp/revoke`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: malformed['not base64'],
      },
      body: new URLSearchParams({ token: 'anything', client_id: 'some-client' }),
    });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: string }).error).toBe('invalid_request');
  });
});
