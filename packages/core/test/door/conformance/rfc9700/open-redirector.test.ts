/**
 * RFC 9700 §4.11.2 (the authorization server as open redirector; MCP 2025-11-25 "Open
 * Redirection"): anyone can register a redirect URI, so `/authorize` redirects to one only after
 * the signed-in user clicked on its consent page, or (for an error) when that user already
 * approved the client. Everything else it refuses with a page: unknown client, unregistered
 * redirect URI, and every error in a request of a client the user never approved.
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
  type TestClient,
} from '../../support/oauth-flow.js';

let store: TestStore;
let host: DoorHost;
const { challenge } = pkce();

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

/** Every error a request can carry once its client and redirect URI are known. */
const REQUEST_ERRORS: Array<[string, Record<string, string | null>, string]> = [
  ['another response_type', { response_type: 'token' }, 'unsupported_response_type'],
  ['no PKCE', { code_challenge: null, code_challenge_method: null }, 'invalid_request'],
  ['plain PKCE', { code_challenge_method: 'plain' }, 'invalid_request'],
  ['an unknown scope', { scope: 'read admin' }, 'invalid_scope'],
  ['another resource', { resource: 'https://other.example/mcp' }, 'invalid_target'],
];

const get = (url: string, cookie?: string) =>
  fetch(url, { headers: cookie ? { cookie } : {}, redirect: 'manual' });

async function expectPage(response: Response, code: string): Promise<string> {
  expect(response.status).toBe(400);
  expect(response.headers.get('location')).toBeNull();
  expect(response.headers.get('content-type')).toContain('text/html');
  const html = await response.text();
  expect(html).toContain(`<code>${code}</code>`);
  return html;
}

const evilClient = () =>
  register(host, { client_name: 'Totally legit', redirect_uris: ['https://evil.example/steal'] });

describe('before the redirect URI is trusted', () => {
  it('§4.11.2 an unknown client_id is answered with a page, never a redirect', async () => {
    const client: TestClient = { clientId: 'mcp_client_nobody', redirectUri: 'https://evil.example/steal' };
    await expectPage(await get(authorizeUrl(host, client, challenge)), 'invalid_request');
  });

  it('§4.11.2 a redirect_uri the client did not register is answered with a page', async () => {
    const client = await register(host);
    const url = authorizeUrl(host, { ...client, redirectUri: 'https://evil.example/steal' }, challenge);
    const html = await expectPage(await get(url, signIn(host, 'user-1')), 'invalid_request');
    expect(html).toContain('redirect_uri does not match');
  });

  it.each(REQUEST_ERRORS)(
    '§4.11.2 %s from a client the user never approved is a page, signed in or not',
    async (_, extra, code) => {
      const client = await evilClient();
      await expectPage(await get(authorizeUrl(host, client, challenge, extra)), code);
      await expectPage(await get(authorizeUrl(host, client, challenge, extra), signIn(host, 'user-1')), code);
    },
  );

  it('§4.11.2 the page escapes what the request carried', async () => {
    const client = await evilClient();
    const url = authorizeUrl(host, client, challenge, { scope: '<script>alert(1)</script>' });
    const html = await expectPage(await get(url), 'invalid_scope');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });
});

describe('an evil.example redirect URI registered by anyone', () => {
  it('§4.11.2 never gets a 302 from /authorize without a sign-in and a click', async () => {
    const client = await evilClient();
    const variants = [{}, ...REQUEST_ERRORS.map(([, extra]) => extra)];
    for (const cookie of [undefined, signIn(host, 'victim')]) {
      for (const extra of variants) {
        const response = await get(authorizeUrl(host, client, challenge, extra), cookie);
        const location = response.headers.get('location');
        // Not signed in, a valid request goes to the host's own sign-in page; nothing goes to evil.
        if (location !== null) expect(new URL(location).origin).toBe(new URL(host.url).origin);
      }
    }
    // The one way there: the signed-in user reads the consent page and clicks.
    const cookie = signIn(host, 'victim');
    const ticket = await openConsent(authorizeUrl(host, client, challenge), cookie);
    expect(ticket.html).toContain('evil.example');
    const approved = await postConsent(host, cookie, {
      transaction: ticket.transaction,
      csrf_token: ticket.csrfToken,
      decision: 'approve',
    });
    expect(new URL(approved.headers.get('location')!).origin).toBe('https://evil.example');
  });

  it("§4.11.2 the attacker's own approval does not make it trusted for anyone else", async () => {
    const client = await evilClient();
    await authorizeCode(host, 'attacker', client);
    const url = authorizeUrl(host, client, challenge, { scope: 'admin' });
    expect((await get(url, signIn(host, 'attacker'))).status).toBe(302);
    await expectPage(await get(url, signIn(host, 'someone-else')), 'invalid_scope');
    await expectPage(await get(url), 'invalid_scope');
  });
});

describe('once the signed-in user approved the client', () => {
  it.each(REQUEST_ERRORS)(
    '§4.11.2 %s goes back to the redirect URI, with state and iss',
    async (_, extra, code) => {
      const client = await register(host);
      const { cookie } = await authorizeCode(host, 'returning-user', client);
      const response = await get(authorizeUrl(host, client, challenge, extra), cookie);
      expect(response.status).toBe(302);
      const location = new URL(response.headers.get('location')!);
      expect(`${location.origin}${location.pathname}`).toBe(client.redirectUri);
      expect(location.searchParams.get('error')).toBe(code);
      expect(location.searchParams.get('state')).toBe('state-123');
      expect(location.searchParams.get('iss')).toBe(`${host.url}/api/service/mcp`);
    },
  );

  it('§4.11.2 withdrawing the consent withdraws the trust', async () => {
    const client = await register(host);
    const { cookie } = await authorizeCode(host, 'withdrawer', client);
    await host.door.withdrawConsent('withdrawer', client.clientId);
    await expectPage(
      await get(authorizeUrl(host, client, challenge, { scope: 'admin' }), cookie),
      'invalid_scope',
    );
  });
});
