/**
 * RFC 9207: every authorization response the door sends to a client, success or error, carries
 * `iss`, the issuer identifier of its metadata, and the metadata says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import {
  authorizeCode,
  authorizeUrl,
  openConsent,
  pkce,
  postConsent,
  register,
  signIn,
} from '../../support/oauth-flow.js';

let store: TestStore;
let host: DoorHost;
let issuer: string;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
  const metadata = await fetch(`${host.url}/.well-known/oauth-authorization-server/api/service/mcp`);
  issuer = (await metadata.json()).issuer;
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

const issOf = (response: Response) => new URL(response.headers.get('location')!).searchParams.get('iss');

describe('the iss authorization response parameter', () => {
  it('§3 the metadata advertises authorization_response_iss_parameter_supported', async () => {
    const response = await fetch(`${host.url}/.well-known/oauth-authorization-server/api/service/mcp`);
    expect((await response.json()).authorization_response_iss_parameter_supported).toBe(true);
    expect(issuer).toBe(`${host.url}/api/service/mcp`);
  });

  it('§2 a successful response carries iss, the issuer of the metadata', async () => {
    const client = await register(host);
    const cookie = signIn(host, 'user-1');
    const ticket = await openConsent(authorizeUrl(host, client, pkce().challenge), cookie);
    const approved = await postConsent(host, cookie, {
      transaction: ticket.transaction,
      csrf_token: ticket.csrfToken,
      decision: 'approve',
    });
    expect(new URL(approved.headers.get('location')!).searchParams.get('code')).toMatch(/^mcp_code_/);
    expect(issOf(approved)).toBe(issuer);
  });

  it('§2 an error response for a denial carries iss', async () => {
    const client = await register(host);
    const cookie = signIn(host, 'user-1');
    const ticket = await openConsent(authorizeUrl(host, client, pkce().challenge), cookie);
    const denied = await postConsent(host, cookie, {
      transaction: ticket.transaction,
      csrf_token: ticket.csrfToken,
      decision: 'deny',
    });
    expect(new URL(denied.headers.get('location')!).searchParams.get('error')).toBe('access_denied');
    expect(issOf(denied)).toBe(issuer);
  });

  it('§2 an error response redirected to an approved client carries iss', async () => {
    const client = await register(host);
    const { cookie } = await authorizeCode(host, 'user-1', client);
    const response = await fetch(authorizeUrl(host, client, pkce().challenge, { scope: 'admin' }), {
      headers: { cookie },
      redirect: 'manual',
    });
    expect(new URL(response.headers.get('location')!).searchParams.get('error')).toBe('invalid_scope');
    expect(issOf(response)).toBe(issuer);
  });

  it("§2 a legacy adapter's approval carries iss too", async () => {
    const legacy = await startDoorHost(store, {
      oauth: { withoutSession: true, authorize: () => ({ subject: 'legacy-user' }) },
    });
    try {
      legacy.users.set('legacy-user', { subject: 'legacy-user', kind: 'user', name: 'legacy-user' });
      const client = await register(legacy);
      const response = await fetch(authorizeUrl(legacy, client, pkce().challenge), { redirect: 'manual' });
      expect(response.status).toBe(302);
      expect(issOf(response)).toBe(`${legacy.url}/api/service/mcp`);
    } finally {
      await legacy.close();
    }
  });
});
