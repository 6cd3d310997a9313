/**
 * `/revoke` (RFC 7009) exactly as the door's contract lists it: an empty 200 for every landed revocation,
 * unknown tokens and hints included; the listed 400s; an access token revokes itself; a refresh
 * token retires its family and leaves the client's other authorizations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import { authorizeCode, exchange, register, rpc, tokenRequest, tokensFor } from './support/oauth-flow.js';

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

const revoke = (fields: Record<string, string>, contentType = 'application/x-www-form-urlencoded') =>
  fetch(`${host.url}/api/service/mcp/revoke`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: contentType.includes('json') ? JSON.stringify(fields) : new URLSearchParams(fields),
  });

const refresh = (clientId: string, refreshToken: string) =>
  tokenRequest(host, { grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken });

describe('token revocation', () => {
  it('answers 405 to other methods, its Allow naming the CORS preflight it answers too', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const response = await fetch(`${host.url}/api/service/mcp/revoke`, { method });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow'), method).toBe('POST, OPTIONS');
    }
  });

  it('answers an empty 200 for unknown tokens and unknown hints', async () => {
    const client = await register(host);
    for (const fields of [
      { token: 'mcp_at_unknown', client_id: client.clientId },
      { token: 'mcp_rt_unknown', client_id: client.clientId, token_type_hint: 'refresh_token' },
      { token: 'whatever', client_id: client.clientId, token_type_hint: 'no_such_hint' },
    ] as Record<string, string>[]) {
      const response = await revoke(fields);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe('');
    }
  });

  it('revokes an access token alone: the refresh token still works', async () => {
    const tokens = await tokensFor(host);
    const response = await revoke({
      token: tokens.access_token,
      client_id: tokens.client.clientId,
      token_type_hint: 'access_token',
    });
    expect(response.status).toBe(200);
    expect((await rpc(host, tokens.access_token, 'tools/list')).status).toBe(401);
    expect((await refresh(tokens.client.clientId, tokens.refresh_token!)).status).toBe(200);
  });

  it('takes the client from HTTP Basic as /token does (RFC 6749 §2.3), and refuses a body client that differs', async () => {
    const tokens = await tokensFor(host);
    const basic = (user: string) => `Basic ${Buffer.from(`${encodeURIComponent(user)}:`).toString('base64')}`;
    const viaBasic = await fetch(`${host.url}/api/service/mcp/revoke`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basic(tokens.client.clientId),
      },
      body: new URLSearchParams({ token: tokens.access_token }),
    });
    expect(viaBasic.status).toBe(200);
    expect((await rpc(host, tokens.access_token, 'tools/list')).status).toBe(401);

    const other = await register(host);
    const differing = await fetch(`${host.url}/api/service/mcp/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(other.clientId) },
      body: new URLSearchParams({ token: tokens.refresh_token!, client_id: tokens.client.clientId }),
    });
    expect(differing.status).toBe(400);
    expect((await differing.json()).error).toBe('invalid_request');
  });

  it('never hands out a revoked access token again: a refresh retried in the grace window is refused', async () => {
    const tokens = await tokensFor(host);
    const next = await (await refresh(tokens.client.clientId, tokens.refresh_token!)).json();
    const revoked = await revoke({ token: next.access_token, client_id: tokens.client.clientId });
    expect(revoked.status).toBe(200);
    // Within the grace window, the rotated token would answer the same pair: one member is dead.
    const retry = await refresh(tokens.client.clientId, tokens.refresh_token!);
    expect(retry.status).toBe(400);
    expect((await retry.json()).error).toBe('invalid_grant');
    // The successor refresh token, never revoked, still works.
    expect((await refresh(tokens.client.clientId, next.refresh_token)).status).toBe(200);
  });

  it("retires the whole family on a refresh token and leaves the client's other authorizations", async () => {
    const client = await register(host);
    const first = await exchange(host, await authorizeCode(host, 'user-a', client));
    const rotated = await (await refresh(client.clientId, first.refresh_token!)).json();
    const second = await exchange(host, await authorizeCode(host, 'user-a', client));

    // The hint is only a hint: a refresh token given as an access token still retires its family.
    const response = await revoke({
      token: rotated.refresh_token,
      client_id: client.clientId,
      token_type_hint: 'access_token',
    });
    expect(response.status).toBe(200);
    expect((await rpc(host, first.access_token, 'tools/list')).status).toBe(401);
    expect((await rpc(host, rotated.access_token, 'tools/list')).status).toBe(401);
    expect((await refresh(client.clientId, rotated.refresh_token)).status).toBe(400);

    expect((await rpc(host, second.access_token, 'tools/list')).status).toBe(200);
    expect((await refresh(client.clientId, second.refresh_token!)).status).toBe(200);
  });

  it('refuses a token issued to a different client with a 400 and leaves it working', async () => {
    const tokens = await tokensFor(host);
    const other = await register(host);
    const response = await revoke({ token: tokens.refresh_token!, client_id: other.clientId });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: 'unauthorized_client',
      error_description: 'The token was issued to another client',
    });
    expect((await rpc(host, tokens.access_token, 'tools/list')).status).toBe(200);
  });

  it.each([
    [{ client_id: 'mcp_client_x' }, 'invalid_request', 'token is required'],
    [
      { token: 'mcp_at_x' },
      'invalid_request',
      'client_id is required (in the body, or as the HTTP Basic user)',
    ],
    [{ token: 'mcp_at_x', client_id: 'mcp_client_unknown' }, 'invalid_client', 'Unknown client_id'],
    [
      { token: 'mcp_at_x', client_id: 'mcp_client_\u0000' },
      'invalid_request',
      'client_id contains a NUL character or invalid Unicode',
    ],
  ])('answers %j with a 400 %s', async (fields, error, description) => {
    const response = await revoke(fields as Record<string, string>);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error, error_description: description });
  });

  it('refuses a non-form content type with a 400', async () => {
    const client = await register(host);
    const response = await revoke({ token: 'x', client_id: client.clientId }, 'application/json');
    expect(response.status).toBe(400);
    expect((await response.json()).error).toBe('invalid_request');
  });
});
