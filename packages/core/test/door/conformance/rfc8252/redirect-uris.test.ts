/**
 * RFC 8252 (OAuth for native apps): a registered loopback redirect URI matches on any port at
 * authorization time (§7.3; the door counts `localhost` as loopback too), everything else string
 * for string; apps may register their own private-use scheme (§7.1), but never a scheme the
 * browser handles itself, nor plain http off loopback (§7.3).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import {
  authorizeCode,
  authorizeUrl,
  exchange,
  openConsent,
  pkce,
  register,
  signIn,
  tokenRequest,
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

const registerUris = (redirectUris: string[]) =>
  fetch(`${host.url}/api/service/mcp/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Native app', redirect_uris: redirectUris }),
  });

/** The answer to an authorize GET by a signed-in user with `redirectUri`. */
const authorizeWith = async (clientId: string, redirectUri: string) =>
  fetch(authorizeUrl(host, { clientId, redirectUri }, challenge), {
    headers: { cookie: signIn(host, 'user-1') },
    redirect: 'manual',
  });

describe('§7.3 loopback interface redirection', () => {
  it.each([
    ['127.0.0.1', 'http://127.0.0.1/callback', 'http://127.0.0.1:54321/callback'],
    ['[::1]', 'http://[::1]/callback', 'http://[::1]:61000/callback'],
    ['localhost', 'http://localhost:8787/callback', 'http://localhost:3118/callback'],
  ])(
    '§7.3 a %s redirect URI matches on any port, and the code goes to that port',
    async (_, registered, used) => {
      const client = await register(host, { redirect_uris: [registered] });
      const flow = await authorizeCode(host, 'user-1', { clientId: client.clientId, redirectUri: used });
      const tokens = await exchange(host, flow);
      expect(tokens.access_token).toMatch(/^mcp_at_/);
    },
  );

  it('§7.3 the token request must name the redirect URI the authorization used, port included', async () => {
    const client = await register(host, { redirect_uris: ['http://127.0.0.1/callback'] });
    const flow = await authorizeCode(host, 'user-1', {
      clientId: client.clientId,
      redirectUri: 'http://127.0.0.1:9999/callback',
    });
    const response = await tokenRequest(host, {
      grant_type: 'authorization_code',
      code: flow.code,
      client_id: client.clientId,
      redirect_uri: 'http://127.0.0.1/callback',
      code_verifier: flow.pkce.verifier,
    });
    expect(response.status).toBe(400);
    expect((await response.json()).error).toBe('invalid_grant');
  });

  it.each([
    ['another path', 'http://127.0.0.1:5000/other'],
    ['a longer path', 'http://127.0.0.1:5000/callback/more'],
    ['a query', 'http://127.0.0.1:5000/callback?next=x'],
    ['another loopback host', 'http://localhost:5000/callback'],
    ['a port out of range', 'http://127.0.0.1:70000/callback'],
    ['userinfo before the host', 'http://127.0.0.1:5000@evil.example/callback'],
  ])('§7.3 only the port may vary: %s is refused with a page', async (_, used) => {
    const client = await register(host, { redirect_uris: ['http://127.0.0.1/callback'] });
    const response = await authorizeWith(client.clientId, used);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });

  it('§7.3 any-port matching is for loopback only: an https redirect URI matches string for string', async () => {
    const client = await register(host, { redirect_uris: ['https://app.example/callback'] });
    expect((await authorizeWith(client.clientId, 'https://app.example:8443/callback')).status).toBe(400);
    expect((await authorizeWith(client.clientId, 'https://app.example/callback')).status).toBe(200);
  });

  it('§7.3 the consent page says the answer goes to an app on this device', async () => {
    const client = await register(host, { redirect_uris: ['http://127.0.0.1/callback'] });
    const ticket = await openConsent(
      authorizeUrl(
        host,
        { clientId: client.clientId, redirectUri: 'http://127.0.0.1:4567/callback' },
        challenge,
      ),
      signIn(host, 'user-1'),
    );
    expect(ticket.html).toContain('an app on this device, at <strong>127.0.0.1:4567</strong>');
    expect(ticket.response.headers.get('content-security-policy')).toContain(
      "form-action 'self' http://127.0.0.1:4567",
    );
  });
});

describe('§7.1 private-use URI scheme redirection', () => {
  it.each([
    ['a reverse-domain scheme', 'com.example.app:/oauth2redirect/example-provider'],
    ["Cursor's scheme", 'cursor://anysphere.cursor-mcp/oauth/callback'],
  ])('§7.1 %s registers and receives the code', async (_, redirectUri) => {
    const client = await register(host, { redirect_uris: [redirectUri] });
    const flow = await authorizeCode(host, 'user-1', client);
    expect(flow.code).toMatch(/^mcp_code_/);
    expect((await exchange(host, flow)).access_token).toMatch(/^mcp_at_/);
  });

  it('§7.1 the consent page names the scheme and lets its form answer to it (CSP form-action)', async () => {
    const client = await register(host, { redirect_uris: ['cursor://anysphere.cursor-mcp/oauth/callback'] });
    const ticket = await openConsent(authorizeUrl(host, client, challenge), signIn(host, 'user-1'));
    expect(ticket.html).toContain('the app that opens <strong>cursor:</strong> links');
    expect(ticket.response.headers.get('content-security-policy')).toContain("form-action 'self' cursor:");
  });

  it.each([
    'javascript:alert(document.domain)',
    'JavaScript://%0Aalert(1)',
    'data:text/html,<script>alert(1)</script>',
    'file:///etc/passwd',
    'vbscript:msgbox(1)',
    'blob:https://app.example/0b5e',
    'about:blank',
    'view-source:https://app.example/',
    'ws://127.0.0.1/callback',
  ])('§7.1 a scheme the browser handles itself is refused: %s', async (uri) => {
    const response = await registerUris([uri]);
    expect(response.status).toBe(400);
    expect((await response.json()).error).toBe('invalid_redirect_uri');
  });

  it('§7.3 plain http is for loopback only: refused elsewhere, and one bad URI refuses the whole registration', async () => {
    for (const uris of [
      ['http://app.example/callback'],
      ['http://10.0.0.5/callback'],
      ['https://app.example/cb', 'http://app.example/cb'],
    ]) {
      const response = await registerUris(uris);
      expect(response.status, uris.join(' ')).toBe(400);
      expect((await response.json()).error).toBe('invalid_redirect_uri');
    }
  });
});
