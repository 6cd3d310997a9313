/**
 * RFC 7591 §2 and §3.2.1 with the registration bodies real MCP clients send, byte for byte (the
 * table in docs/door.md): each registers, and each completes an authorization with one of its
 * redirect URIs and redeems the code.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { authorizeUrl, exchange, openConsent, pkce, postConsent, signIn } from '../../support/oauth-flow.js';

let store: TestStore;
let host: DoorHost;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

/** Each client's body, and the redirect URI it then authorizes with. */
const CLIENTS: Array<[string, Record<string, unknown>, string]> = [
  [
    'Claude Code',
    {
      client_name: 'Claude Code (notes)',
      redirect_uris: ['http://localhost:54212/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'read write',
    },
    'http://localhost:54212/callback',
  ],
  [
    'Cursor',
    {
      redirect_uris: [
        'cursor://anysphere.cursor-mcp/oauth/callback',
        'https://www.cursor.com/agents/mcp/oauth/callback',
        'http://localhost:8787/callback',
      ],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      client_name: 'Cursor',
    },
    'cursor://anysphere.cursor-mcp/oauth/callback',
  ],
  [
    'VS Code',
    {
      client_name: 'Visual Studio Code',
      client_uri: 'https://code.visualstudio.com',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [
        'https://insiders.vscode.dev/redirect',
        'https://vscode.dev/redirect',
        'http://127.0.0.1/',
        'http://127.0.0.1:33418/',
      ],
      scope: 'read write',
      token_endpoint_auth_method: 'none',
      application_type: 'native',
    },
    // Port 33418 was taken: VS Code listens on another one, which the door accepts (RFC 8252 §7.3).
    'http://127.0.0.1:49152/',
  ],
  [
    'MCP Inspector',
    {
      redirect_uris: ['http://localhost:6274/oauth/callback', 'http://localhost:6274/oauth/callback/debug'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      client_name: 'MCP Inspector',
      client_uri: 'https://github.com/modelcontextprotocol/inspector',
      scope: 'read write',
    },
    'http://localhost:6274/oauth/callback',
  ],
];

describe('registration bodies of real MCP clients', () => {
  it.each(CLIENTS)(
    '§3.2.1 %s registers with its own body and completes an authorization',
    async (_, body, redirectUri) => {
      const response = await fetch(`${host.url}/api/service/mcp/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(201);
      const registered = await response.json();
      expect(registered.redirect_uris).toEqual(body.redirect_uris);
      expect(registered.token_endpoint_auth_method).toBe('none');
      expect(registered).not.toHaveProperty('client_secret');

      const client = { clientId: registered.client_id, redirectUri };
      const pair = pkce();
      const cookie = signIn(host, 'user-1');
      const ticket = await openConsent(authorizeUrl(host, client, pair.challenge), cookie);
      expect(ticket.response.status).toBe(200);
      const approved = await postConsent(host, cookie, {
        transaction: ticket.transaction,
        csrf_token: ticket.csrfToken,
        decision: 'approve',
      });
      const location = approved.headers.get('location')!;
      expect(location.startsWith(`${redirectUri}?`)).toBe(true);
      const code = new URL(location).searchParams.get('code')!;
      const tokens = await exchange(host, { code, client, pkce: pair });
      expect(tokens.access_token).toMatch(/^mcp_at_/);
      expect(tokens.refresh_token).toMatch(/^mcp_rt_/);
    },
  );

  it('§3.2.1 a grant the door does not offer is dropped from what is registered, not refused', async () => {
    const response = await fetch(`${host.url}/api/service/mcp/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: ['http://127.0.0.1/'],
        grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      }),
    });
    expect(response.status).toBe(201);
    expect((await response.json()).grant_types).toEqual(['authorization_code', 'refresh_token']);
  });
});

describe('the registered scope', () => {
  it('§2 caps what the client may ask for at authorization (invalid_scope)', async () => {
    const response = await fetch(`${host.url}/api/service/mcp/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Reader', redirect_uris: [`${host.url}/callback`], scope: 'read' }),
    });
    const client = {
      clientId: ((await response.json()) as { client_id: string }).client_id,
      redirectUri: `${host.url}/callback`,
    };
    const { challenge } = pkce();
    const cookie = signIn(host, 'scope-capped-user');
    const wider = await fetch(authorizeUrl(host, client, challenge, { scope: 'read write' }), {
      headers: { cookie },
      redirect: 'manual',
    });
    // Nobody approved this client yet: the refusal is a page, not a redirect.
    expect(wider.status).toBe(400);
    const page = await wider.text();
    expect(page).toContain('invalid_scope');
    expect(page).toContain('registered scope');
    const within = await fetch(authorizeUrl(host, client, challenge, { scope: 'read' }), {
      headers: { cookie },
      redirect: 'manual',
    });
    expect(within.status).toBe(200);
    expect(await within.text()).toContain('<form');
  });
});
