/**
 * RFC 8693 §2.1 at the service-key exchange: `subject_token` and `subject_token_type` are
 * required, and a subject that is a missing value spelled out is no user.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';

const SERVICE_KEY = `mcp_svc_${'e'.repeat(43)}`;
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

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

/** The exchange with `fields` replacing the defaults; a null field is left out. */
async function exchange(fields: Record<string, string | null>) {
  const form = Object.entries({
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
    client_id: 'service',
    client_secret: SERVICE_KEY,
    subject_token: 'user-7',
    subject_token_type: ACCESS_TOKEN_TYPE,
    ...fields,
  }).filter((entry): entry is [string, string] => entry[1] !== null);
  const response = await fetch(`${host.url}/api/service/mcp/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  return { status: response.status, body: await response.json() };
}

describe('service-key exchange requests', () => {
  it('§2.2.1 a complete request answers an access token and its issued_token_type', async () => {
    expect(await exchange({})).toMatchObject({
      status: 200,
      body: { access_token: expect.stringMatching(/^mcp_at_/), issued_token_type: ACCESS_TOKEN_TYPE },
    });
  });

  it('§2.1 a request without subject_token_type is refused (400 invalid_request)', async () => {
    for (const subjectTokenType of [null, '', '  ']) {
      expect(await exchange({ subject_token_type: subjectTokenType })).toEqual({
        status: 400,
        body: { error: 'invalid_request', error_description: 'subject_token_type is required' },
      });
    }
  });

  it('§2.1 a request without subject_token, or with an empty one, is refused (400 invalid_request)', async () => {
    expect(await exchange({ subject_token: null })).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', error_description: 'subject_token is required' },
    });
    for (const subject of ['', ' ']) {
      expect(await exchange({ subject_token: subject })).toEqual({
        status: 400,
        body: { error: 'invalid_request', error_description: expect.stringMatching(/^subject_token /) },
      });
    }
  });

  it('a subject_token the wire would refuse as a user id (a control character) is refused (400 invalid_request)', async () => {
    for (const subject of ['user\u0007', 'line\nbreak', 'tab\there']) {
      expect(await exchange({ subject_token: subject })).toEqual({
        status: 400,
        body: {
          error: 'invalid_request',
          error_description: 'subject_token must not contain control characters',
        },
      });
    }
    expect((await exchange({ subject_token: 'Zoë 🙂' })).status).toBe(200);
  });

  it('§2.1 a subject_token that is a missing value spelled out ("undefined", "null") is refused (400 invalid_request)', async () => {
    for (const subject of ['undefined', 'null']) {
      expect(await exchange({ subject_token: subject })).toEqual({
        status: 400,
        body: { error: 'invalid_request', error_description: 'subject_token must name a user' },
      });
    }
  });
});

describe('service-key exchange subjects', () => {
  it('takes a subject of up to 256 characters counted as the wire counts them (code points), no more', async () => {
    expect((await exchange({ subject_token: '😀'.repeat(256) })).status).toBe(200);
    expect(await exchange({ subject_token: '😀'.repeat(257) })).toEqual({
      status: 400,
      body: { error: 'invalid_request', error_description: 'subject_token is too long' },
    });
  });
});
