/**
 * The shared input guard at the door: text with a NUL character or an unpaired surrogate, and
 * JSON nested past the cap, are refused in the terms each client expects (a JSON-RPC Invalid
 * Request on the MCP transport, OAuth's `{ error, error_description }` on the OAuth endpoints, a
 * page on the consent form) before they reach a tool, the adapter or the store.
 *
 * @see docs/door.md, docs/errors.md "Input rules"
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import { INITIALIZE_PARAMS, rpc, signIn, type TokenSet, tokensFor } from './support/oauth-flow.js';

const SECRET = 'federation-secret-of-at-least-32-characters';
let store: TestStore;
let host: DoorHost;
let tokens: TokenSet;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store, {
    mcp: { federation: true },
    env: { SERVICE_MCP_FEDERATION_SECRET: SECRET },
  });
  tokens = await tokensFor(host, 'guarded-user');
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

/** Posts a raw body to the MCP endpoint as a well-behaved client would. */
const postMcp = (body: string) =>
  fetch(`${host.url}/api/service/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${tokens.access_token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body,
  });

const toolCall = (args: string, name = '"create_note"') =>
  `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":${name},"arguments":${args}}}`;

describe('the MCP transport', () => {
  it.each([
    ['a NUL character in a tool argument', toolCall('{"text":"a\\u0000b"}'), 'body.params.arguments.text'],
    ['an unpaired surrogate in a tool name', toolCall('{}', '"\\ud800"'), 'body.params.name'],
    ['a NUL character in a key', toolCall('{"te\\u0000xt":"a"}'), 'body.params.arguments: a key'],
    ['arguments nested 5,000 deep', toolCall(`${'['.repeat(5000)}${']'.repeat(5000)}`), 'nests deeper'],
  ])(
    'answers %s with a JSON-RPC Invalid Request (HTTP 400, no id), and runs no tool',
    async (_, body, where) => {
      const before = host.executions.length;
      const response = await postMcp(body);
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toContain('application/json');
      const answer = await response.json();
      expect(answer).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
      expect(answer.error.message).toContain(where);
      expect(host.executions.length).toBe(before);
    },
  );

  it('keeps a parse error for text that is not JSON, and serves clean calls as before', async () => {
    for (const body of ['', '  ', '{"jsonrpc":']) {
      const response = await postMcp(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect((await response.json()).error.code).toBe(-32700);
    }
    // Emoji are paired surrogates: clean text, through to the tool.
    const ok = await postMcp(toolCall('{"text":"notes 😀"}'));
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('notes 😀');
    const initialized = await rpc(host, tokens.access_token, 'initialize', INITIALIZE_PARAMS);
    expect(initialized.status).toBe(200);
  });
});

describe('registration', () => {
  const register = (body: string) =>
    fetch(`${host.url}/api/service/mcp/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });

  it('refuses metadata nested past the cap, before parsing, as invalid_client_metadata', async () => {
    const deep = `{"redirect_uris":["https://a.example/cb"],"x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const response = await register(deep);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: 'invalid_client_metadata',
      error_description: 'body nests deeper than 32 levels',
    });
  });

  it('refuses a NUL character in a key, not only in a value', async () => {
    const response = await register('{"redirect_uris":["https://a.example/cb"],"x\\u0000":1}');
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: 'invalid_client_metadata',
      error_description: 'Metadata must not contain NUL characters or invalid Unicode',
    });
  });
});

describe('HTTP Basic client authentication', () => {
  // The header is not part of the form, so its text needs the same rule as a form field.
  const basic = (user: string) => `Basic ${Buffer.from(`${user}:`).toString('base64')}`;

  const bodies: Record<string, string> = {
    '/token': 'grant_type=refresh_token&refresh_token=mcp_rt_x',
    '/revoke': 'token=mcp_at_x',
  };

  it.each(Object.keys(bodies))(
    'refuses a NUL character in the Basic user at %s, raw or as %%00',
    async (path) => {
      const body = bodies[path]!;
      for (const user of ['client\u0000id', 'client%00id']) {
        const response = await fetch(`${host.url}/api/service/mcp${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(user) },
          body,
        });
        expect(response.status).toBe(400);
        expect(await response.json()).toEqual({
          error: 'invalid_request',
          error_description: 'HTTP Basic credentials contain a NUL character or invalid Unicode',
        });
      }
    },
  );
});

describe('the consent form', () => {
  it('answers a NUL character in a field with a 400 page', async () => {
    const cookie = signIn(host, 'guarded-user');
    const response = await fetch(`${host.url}/api/service/mcp/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams({ transaction: 'tx\u0000', csrf_token: 'c', decision: 'approve' }),
      redirect: 'manual',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(await response.text()).toContain('must not contain NUL characters or invalid Unicode');
  });
});

describe('federation', () => {
  it('refuses a signed request whose claims hold a NUL character or an unpaired surrogate', async () => {
    const cookie = signIn(host, 'guarded-user');
    for (const clientName of ['Broker\u0000', 'Broker\ud800']) {
      const request = await new SignJWT({
        jti: randomUUID(),
        redirect_uri: 'https://broker.example/callback',
        scopes: ['read'],
        client_name: clientName,
      })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer('https://broker.example')
        .setAudience(`${host.url}/api/service/mcp`)
        .setExpirationTime(Math.floor(Date.now() / 1000) + 120)
        .sign(new TextEncoder().encode(SECRET));
      const response = await fetch(
        `${host.url}/api/service/mcp/federate?request=${encodeURIComponent(request)}`,
        { headers: { cookie }, redirect: 'manual' },
      );
      expect(response.status, JSON.stringify(clientName)).toBe(400);
      expect(await response.json()).toEqual({
        error: 'invalid_request',
        error_description: 'The federation request must not contain NUL characters or invalid Unicode',
      });
    }
  });
});
