/**
 * `/token`: codes live 60 s and are claimed at presentation before the verifier is checked;
 * refresh tokens rotate and presenting a rotated one after its grace window revokes the family;
 * the RFC 8693 service-key exchange.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { listAudit } from '../../src/agent/audit.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import {
  authorizeCode,
  exchange,
  INITIALIZE_PARAMS,
  pkce,
  register,
  rpc,
  tokenRequest,
  tokensFor,
} from './support/oauth-flow.js';

const SERVICE_KEY = `mcp_svc_${'k'.repeat(43)}`;
const RETIRED_KEY = `mcp_svc_${'r'.repeat(43)}`;

let store: TestStore;
let host: DoorHost;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store, {
    mcp: {
      serviceAuth: { keys: [SERVICE_KEY, { key: RETIRED_KEY, retired: true }], clientId: 'acme-backend' },
    },
  });
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

const codeFields = (flow: Awaited<ReturnType<typeof authorizeCode>>, extra: Record<string, string> = {}) => ({
  grant_type: 'authorization_code',
  code: flow.code,
  client_id: flow.client.clientId,
  redirect_uri: flow.client.redirectUri,
  code_verifier: flow.pkce.verifier,
  ...extra,
});

const errorOf = async (response: Response) => ({ status: response.status, ...(await response.json()) });

describe('authorization code grant', () => {
  it('answers 405 to other methods, its Allow naming the CORS preflight it answers too', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const response = await fetch(`${host.url}/api/service/mcp/token`, { method });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow'), method).toBe('POST, OPTIONS');
    }
  });

  it('issues a one-hour access token and a refresh token, uncached', async () => {
    const flow = await authorizeCode(host);
    const response = await tokenRequest(host, codeFields(flow));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({
      access_token: expect.stringMatching(/^mcp_at_[A-Za-z0-9_-]{43}$/),
      token_type: 'Bearer',
      expires_in: 3600,
      refresh_token: expect.stringMatching(/^mcp_rt_[A-Za-z0-9_-]{43}$/),
      scope: 'read write',
    });
  });

  it('refuses a replayed code and revokes the tokens issued from it', async () => {
    const flow = await authorizeCode(host);
    const first = await exchange(host, flow);
    expect((await rpc(host, first.access_token, 'tools/list')).status).toBe(200);
    const replay = await tokenRequest(host, codeFields(flow));
    expect(await errorOf(replay)).toEqual({
      status: 400,
      error: 'invalid_grant',
      error_description: 'Authorization code is invalid or expired',
    });
    expect((await rpc(host, first.access_token, 'tools/list')).status).toBe(401);
  });

  it('burns the code on a wrong verifier: the right verifier afterwards is refused too', async () => {
    const flow = await authorizeCode(host);
    const wrong = await tokenRequest(host, codeFields(flow, { code_verifier: pkce().verifier }));
    expect(await errorOf(wrong)).toEqual({
      status: 400,
      error: 'invalid_grant',
      error_description: 'PKCE verification failed',
    });
    const right = await tokenRequest(host, codeFields(flow));
    expect(await errorOf(right)).toEqual({
      status: 400,
      error: 'invalid_grant',
      error_description: 'Authorization code is invalid or expired',
    });
  });

  it('refuses a malformed verifier before looking the code up, so the code survives', async () => {
    const flow = await authorizeCode(host);
    const malformed = await tokenRequest(host, codeFields(flow, { code_verifier: 'short' }));
    expect((await errorOf(malformed)).error).toBe('invalid_request');
    expect((await tokenRequest(host, codeFields(flow))).status).toBe(200);
  });

  it('refuses a code presented by another client', async () => {
    const flow = await authorizeCode(host);
    const other = await register(host);
    const response = await tokenRequest(host, codeFields(flow, { client_id: other.clientId }));
    expect(await errorOf(response)).toEqual({
      status: 400,
      error: 'invalid_grant',
      error_description: 'Authorization code was issued to another client',
    });
    // Claimed at presentation: the rightful client cannot use it afterwards either.
    expect((await tokenRequest(host, codeFields(flow))).status).toBe(400);
  });

  it('takes the client id as the HTTP Basic user, as a client registered for a secret method sends it', async () => {
    const basic = (user: string) => `Basic ${Buffer.from(`${encodeURIComponent(user)}:`).toString('base64')}`;
    const viaBasic = (flow: Awaited<ReturnType<typeof authorizeCode>>, user: string, bodyClient?: string) => {
      const { client_id: _, ...fields } = codeFields(flow);
      return fetch(`${host.url}/api/service/mcp/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(user) },
        body: new URLSearchParams({ ...fields, ...(bodyClient ? { client_id: bodyClient } : {}) }),
      });
    };
    const flow = await authorizeCode(host);
    expect((await viaBasic(flow, flow.client.clientId)).status).toBe(200);
    // Two different clients in one request are refused before the code is looked up.
    const other = await authorizeCode(host);
    const differ = await viaBasic(other, other.client.clientId, 'mcp_client_someone_else');
    expect((await errorOf(differ)).error).toBe('invalid_request');
    expect((await tokenRequest(host, codeFields(other))).status).toBe(200);
  });

  it('refuses a redirect_uri that differs from the authorization request', async () => {
    const flow = await authorizeCode(host);
    const response = await tokenRequest(
      host,
      codeFields(flow, { redirect_uri: `${flow.client.redirectUri}x` }),
    );
    expect((await errorOf(response)).error).toBe('invalid_grant');
  });

  it('lets a code live 60 seconds', async () => {
    const fresh = await authorizeCode(host);
    host.clock.advance(59_000);
    expect((await tokenRequest(host, codeFields(fresh))).status).toBe(200);
    const stale = await authorizeCode(host);
    host.clock.advance(61_000);
    expect(await errorOf(await tokenRequest(host, codeFields(stale)))).toMatchObject({
      error: 'invalid_grant',
      error_description: 'Authorization code is invalid or expired',
    });
  });

  it('refuses an unknown client with invalid_client and unknown codes with invalid_grant', async () => {
    const flow = await authorizeCode(host);
    expect(
      await errorOf(await tokenRequest(host, codeFields(flow, { client_id: 'mcp_client_nope' }))),
    ).toMatchObject({
      status: 401,
      error: 'invalid_client',
    });
    expect((await errorOf(await tokenRequest(host, codeFields(flow, { code: 'mcp_code_nope' })))).error).toBe(
      'invalid_grant',
    );
  });

  it.each([
    [{ grant_type: 'password' }, 400, 'unsupported_grant_type'],
    [{ grant_type: 'client_credentials' }, 400, 'unsupported_grant_type'],
    [{}, 400, 'invalid_request'],
    [{ grant_type: 'authorization_code' }, 400, 'invalid_request'],
  ])('answers %j with %i %s', async (fields, status, error) => {
    expect(await errorOf(await tokenRequest(host, fields as Record<string, string>))).toMatchObject({
      status,
      error,
    });
  });

  it('answers a NUL character in any field with invalid_request, never a 500', async () => {
    const requests: Record<string, string>[] = [
      { grant_type: 'refresh_token', client_id: 'mcp_client_\u0000', refresh_token: 'mcp_rt_x' },
      {
        grant_type: 'authorization_code',
        client_id: 'a\u0000b',
        code: 'mcp_code_x',
        redirect_uri: 'https://a.example/cb',
        code_verifier: 'v'.repeat(43),
      },
    ];
    for (const fields of requests) {
      expect(await errorOf(await tokenRequest(host, fields))).toEqual({
        status: 400,
        error: 'invalid_request',
        error_description: 'client_id contains a NUL character or invalid Unicode',
      });
    }
  });

  it('refuses a form that is not UTF-8 with invalid_request', async () => {
    const response = await fetch(`${host.url}/api/service/mcp/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: Buffer.concat([
        Buffer.from('grant_type=refresh_token&refresh_token=mcp_rt_'),
        Buffer.from([0xff]),
      ]),
    });
    expect(await errorOf(response)).toEqual({
      status: 400,
      error: 'invalid_request',
      error_description: 'Request body must be UTF-8 text',
    });
  });

  it('refuses a JSON body and a repeated parameter with invalid_request', async () => {
    const json = await fetch(`${host.url}/api/service/mcp/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'authorization_code' }),
    });
    expect(await errorOf(json)).toMatchObject({ status: 400, error: 'invalid_request' });
    const repeated = await fetch(`${host.url}/api/service/mcp/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&grant_type=refresh_token',
    });
    expect(await errorOf(repeated)).toMatchObject({ status: 400, error: 'invalid_request' });
  });
});

describe('refresh token rotation', () => {
  const refresh = (clientId: string, refreshToken: string, extra: Record<string, string> = {}) =>
    tokenRequest(host, {
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: refreshToken,
      ...extra,
    });

  it('rotates: a refresh answers a new access and refresh token, and the old access token keeps working', async () => {
    const tokens = await tokensFor(host);
    const response = await refresh(tokens.client.clientId, tokens.refresh_token!);
    expect(response.status).toBe(200);
    const next = await response.json();
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    expect(next.access_token).not.toBe(tokens.access_token);
    expect(next.scope).toBe('read write');
    expect((await rpc(host, next.access_token, 'tools/list')).status).toBe(200);
  });

  it('revokes the whole family when a rotated refresh token is presented again after the grace window', async () => {
    const tokens = await tokensFor(host);
    const next = await (await refresh(tokens.client.clientId, tokens.refresh_token!)).json();
    host.clock.advance(31_000);
    const reuse = await refresh(tokens.client.clientId, tokens.refresh_token!);
    expect(await errorOf(reuse)).toMatchObject({ status: 400, error: 'invalid_grant' });
    // The successor issued before the reuse is dead too, and so is every access token of the family.
    expect((await errorOf(await refresh(tokens.client.clientId, next.refresh_token))).error).toBe(
      'invalid_grant',
    );
    expect((await rpc(host, next.access_token, 'tools/list')).status).toBe(401);
    expect((await rpc(host, tokens.access_token, 'tools/list')).status).toBe(401);
  });

  it('refuses a refresh token presented by another client without spending it', async () => {
    const tokens = await tokensFor(host);
    const other = await register(host);
    expect(await errorOf(await refresh(other.clientId, tokens.refresh_token!))).toMatchObject({
      error: 'invalid_grant',
      error_description: 'Refresh token was issued to another client',
    });
    expect((await refresh(tokens.client.clientId, tokens.refresh_token!)).status).toBe(200);
  });

  it('refuses a refresh asking for a scope that was not granted, without spending the token', async () => {
    const flow = await authorizeCode(host, 'reader', undefined, { scope: 'read' });
    const tokens = await exchange(host, flow);
    expect(tokens.scope).toBe('read');
    expect(
      (await errorOf(await refresh(flow.client.clientId, tokens.refresh_token!, { scope: 'read write' })))
        .error,
    ).toBe('invalid_scope');
    expect((await refresh(flow.client.clientId, tokens.refresh_token!, { scope: 'read' })).status).toBe(200);
  });

  it("revokes the user's families when their principal no longer resolves", async () => {
    const tokens = await tokensFor(host, 'leaving-user');
    host.users.delete('leaving-user');
    expect((await errorOf(await refresh(tokens.client.clientId, tokens.refresh_token!))).error).toBe(
      'invalid_grant',
    );
    host.users.set('leaving-user', { subject: 'leaving-user' });
    expect((await rpc(host, tokens.access_token, 'tools/list')).status).toBe(401);
  });
});

describe('service-key exchange (RFC 8693)', () => {
  const exchangeKey = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${host.url}/api/service/mcp/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: 'host-user-42',
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        ...fields,
      }),
    });

  it('advertises the exchange grant and both ways of presenting a key in RFC 8414 metadata', async () => {
    const metadata = await (
      await fetch(`${new URL(host.url).origin}/.well-known/oauth-authorization-server/api/service/mcp`)
    ).json();
    expect(metadata.grant_types_supported).toContain('urn:ietf:params:oauth:grant-type:token-exchange');
    expect(metadata.token_endpoint_auth_methods_supported).toEqual([
      'none',
      'client_secret_post',
      'client_secret_basic',
    ]);
  });

  it('answers a ten-minute access token with no refresh token', async () => {
    const response = await exchangeKey({ client_id: 'acme-backend', client_secret: SERVICE_KEY });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toEqual({
      access_token: expect.stringMatching(/^mcp_at_/),
      token_type: 'Bearer',
      expires_in: 600,
      scope: 'read write',
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    });
    expect(body).not.toHaveProperty('refresh_token');
  });

  it('accepts the key by HTTP Basic too', async () => {
    const basic = Buffer.from(`acme-backend:${SERVICE_KEY}`).toString('base64');
    expect((await exchangeKey({}, { authorization: `Basic ${basic}` })).status).toBe(200);
  });

  it('answers a failed HTTP Basic authentication with the Basic challenge (RFC 6749 §5.2)', async () => {
    for (const credentials of [`acme-backend:${RETIRED_KEY}`, `someone-else:${SERVICE_KEY}`]) {
      const basic = Buffer.from(credentials).toString('base64');
      const response = await exchangeKey({}, { authorization: `Basic ${basic}` });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(`Basic realm="${host.url}/api/service/mcp"`);
      expect((await response.json()).error).toBe('invalid_client');
    }
  });

  it('refuses a subject_token with a NUL character as invalid_request, never a 500', async () => {
    const response = await exchangeKey({
      client_id: 'acme-backend',
      client_secret: SERVICE_KEY,
      subject_token: 'host-user\u0000',
    });
    expect(await errorOf(response)).toMatchObject({ status: 400, error: 'invalid_request' });
  });

  it('refuses an address past its failed keys for the window, a right key too, then admits it again', async () => {
    const limited = await startDoorHost(store, {
      mcp: { serviceAuth: { keys: [SERVICE_KEY], clientId: 'acme-backend' } },
      failedCredentialLimit: { limit: 3, windowMs: 60_000 },
    });
    try {
      const once = (key: string) =>
        fetch(`${limited.url}/api/service/mcp/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
            client_id: 'acme-backend',
            client_secret: key,
            subject_token: 'host-user-42',
            subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
          }),
        });
      const wrong = `mcp_svc_${'w'.repeat(43)}`;
      for (let i = 0; i < 3; i++) expect((await once(wrong)).status).toBe(401);
      const refused = await once(wrong);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await refused.json()).error).toBe('rate_limit_exceeded');
      // A right guess now reads as a wrong one: the key is not looked at.
      const right = await once(SERVICE_KEY);
      expect(right.status).toBe(429);
      expect((await right.json()).access_token).toBeUndefined();
      limited.clock.advance(61_000);
      expect((await once(SERVICE_KEY)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('answers a wrong client id, an unknown key and a retired key identically with invalid_client', async () => {
    const answers = await Promise.all([
      exchangeKey({ client_id: 'someone-else', client_secret: SERVICE_KEY }),
      exchangeKey({ client_id: 'acme-backend', client_secret: `mcp_svc_${'u'.repeat(43)}` }),
      exchangeKey({ client_id: 'acme-backend', client_secret: RETIRED_KEY }),
      exchangeKey({ client_id: 'acme-backend' }),
    ]);
    const bodies = await Promise.all(answers.map(async (r) => ({ status: r.status, body: await r.text() })));
    for (const answer of bodies) {
      expect(answer).toEqual({
        status: 401,
        body: JSON.stringify({ error: 'invalid_client', error_description: 'Client authentication failed' }),
      });
    }
  });

  it('attributes calls to the user and to the key as svc:<hash8>, and expires in ten minutes', async () => {
    host.users.set('host-user-42', { subject: 'host-user-42' });
    const { access_token } = await (
      await exchangeKey({ client_id: 'acme-backend', client_secret: SERVICE_KEY })
    ).json();
    const call = await rpc(host, access_token, 'tools/call', { name: 'list_notes', arguments: {} });
    expect(call.body?.result?.structuredContent).toEqual({ notes: ['first', 'second'], tag: null });
    const { createHash } = await import('node:crypto');
    const actor = `svc:${createHash('sha256').update(SERVICE_KEY).digest('hex').slice(0, 8)}`;
    expect(host.actAsCalls.at(-1)?.grant).toEqual({
      subject: 'host-user-42',
      scopes: ['read', 'write'],
      clientId: actor,
    });
    expect(
      host.logs.find((l) => l.message === 'door.tool_call' && l.fields?.actor === actor)?.fields,
    ).toMatchObject({
      subject: 'host-user-42',
      tool: 'list_notes',
      outcome: 'ok',
    });
    await vi.waitFor(async () => {
      const [event] = await listAudit(store.db, 'host-user-42', { limit: 1 });
      expect(event?.data).toEqual({
        tool: 'list_notes',
        via: 'door',
        clientId: 'acme-backend',
        actor,
        ok: true,
      });
    });
    host.clock.advance(10 * 60 * 1000 + 1000);
    expect((await rpc(host, access_token, 'tools/list')).status).toBe(401);
  });

  it('issues a token for an unrecognized user id that fails with 401 invalid_token on its first MCP request', async () => {
    const response = await exchangeKey({
      client_id: 'acme-backend',
      client_secret: SERVICE_KEY,
      subject_token: 'nobody',
    });
    expect(response.status).toBe(200);
    const { access_token } = await response.json();
    const first = await rpc(host, access_token, 'initialize', INITIALIZE_PARAMS);
    expect(first.status).toBe(401);
    expect(first.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('answers unsupported_grant_type on a door with no keys configured, even for a valid key', async () => {
    const plain = await startDoorHost(store);
    try {
      const response = await fetch(`${plain.url}/api/service/mcp/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
          client_id: 'acme-backend',
          client_secret: SERVICE_KEY,
          subject_token: 'host-user-42',
        }),
      });
      expect(await errorOf(response)).toMatchObject({ status: 400, error: 'unsupported_grant_type' });
    } finally {
      await plain.close();
    }
  });
});
