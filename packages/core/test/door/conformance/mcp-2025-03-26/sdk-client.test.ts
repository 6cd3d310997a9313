/**
 * MCP 2025-03-26 as its clients meet the door: authorization-server metadata at the bare origin
 * of the MCP URL (the revision knew no protected-resource metadata), dynamic registration, PKCE,
 * and a transport without the MCP-Protocol-Version header, which this revision did not define.
 * The real SDK client runs the whole lifecycle asking for 2025-03-26, with RFC 9728 hidden from it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { authorizeCode, exchange, INITIALIZE_PARAMS, rpc, tokensFor } from '../../support/oauth-flow.js';
import { type Lifecycle, runLifecycle, type SdkClient, sdkClient } from '../../support/sdk-client.js';

let store: TestStore;
let host: DoorHost;
let sdk: SdkClient;
let life: Lifecycle;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
  sdk = sdkClient(host, { protocolVersion: '2025-03-26', withoutResourceMetadata: true });
  life = await runLifecycle(host, sdk, 'user-2025-03-26');
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

describe('MCP 2025-03-26 authorization', () => {
  it('§2.3.2 serves authorization-server metadata at the bare origin of the MCP URL', async () => {
    const response = await fetch(`${new URL(host.url).origin}/.well-known/oauth-authorization-server`);
    expect(response.status).toBe(200);
    const mcp = `${host.url}/api/service/mcp`;
    expect(await response.json()).toMatchObject({
      issuer: mcp,
      authorization_endpoint: `${mcp}/authorize`,
      token_endpoint: `${mcp}/token`,
      registration_endpoint: `${mcp}/register`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
    });
    // What the SDK client of this revision asked for, and where it found the metadata.
    const discovery = sdk.exchanges.filter((e) => e.url.pathname.startsWith('/.well-known/'));
    expect(discovery.find((e) => e.status === 200)?.url.pathname).toBe(
      '/.well-known/oauth-authorization-server',
    );
  });

  it('§2.4 registers the client dynamically at the advertised endpoint', () => {
    const registration = sdk.exchanges.find((e) => e.url.pathname.endsWith('/register'));
    expect(registration).toMatchObject({ method: 'POST', status: 201 });
    expect(sdk.provider.information?.client_id).toMatch(/^mcp_client_/);
  });

  it('§2.5 runs the authorization code flow with PKCE S256 and no resource indicator', () => {
    const url = sdk.provider.authorizationUrl!;
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // This revision's clients send no resource parameter; the door binds the token to itself anyway.
    expect(url.searchParams.has('resource')).toBe(false);
    const exchange = sdk.exchanges.find((e) => e.url.pathname.endsWith('/token'));
    expect(new URLSearchParams(exchange?.body ?? '').get('grant_type')).toBe('authorization_code');
    expect(exchange?.status).toBe(200);
  });

  it('§2.6.1 takes the access token in the Authorization header of every request, never in the query', async () => {
    const mcpRequests = sdk.exchanges.filter(
      (e) => e.url.pathname === '/api/service/mcp' && e.method === 'POST',
    );
    const authorized = mcpRequests.filter((e) =>
      e.headers.get('authorization')?.startsWith('Bearer mcp_at_'),
    );
    expect(authorized.length).toBeGreaterThanOrEqual(4);
    const { access_token } = await tokensFor(host, 'query-token');
    const inQuery = await fetch(`${host.url}/api/service/mcp?access_token=${access_token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(inQuery.status).toBe(401);
  });

  it('§2.6.2 answers an expired or revoked access token with 401', () => {
    const mcpStatuses = sdk.exchanges
      .filter((e) => e.url.pathname === '/api/service/mcp')
      .map((e) => e.status);
    // The hour-old token, then the one whose grant was revoked.
    expect(mcpStatuses.filter((status) => status === 401).length).toBeGreaterThanOrEqual(3);
    expect(mcpStatuses.at(-1)).toBe(401);
    expect(life.afterRevoke).toBeInstanceOf(Error);
  });

  it('§2.8 answers a call beyond the granted scopes with 403', async () => {
    const { code, client, pkce } = await authorizeCode(host, 'read-only-2025-03-26', undefined, {
      scope: 'read',
    });
    const { access_token } = await exchange(host, { code, client, pkce });
    const refused = await rpc(host, access_token, 'tools/call', {
      name: 'create_note',
      arguments: { text: 'x' },
    });
    expect(refused.status).toBe(403);
  });

  it('§2.9 rotates the refresh token when the SDK client refreshes an expired access token', () => {
    expect(life.afterRefresh.structuredContent).toEqual({ created: 'after refresh' });
    const refreshes = sdk.exchanges.filter(
      (e) => new URLSearchParams(e.body ?? '').get('grant_type') === 'refresh_token',
    );
    expect(refreshes[0]?.status).toBe(200);
    expect(life.refreshTokens[1]).toMatch(/^mcp_rt_/);
    expect(life.refreshTokens[1]).not.toBe(life.refreshTokens[0]);
  });
});

describe('MCP 2025-03-26 lifecycle and transport', () => {
  it('Lifecycle §Version Negotiation: a client asking 2025-03-26 is answered 2025-03-26', async () => {
    expect(life.negotiated).toBe('2025-03-26');
    const { access_token } = await tokensFor(host, 'raw-2025-03-26');
    const answer = await rpc(host, access_token, 'initialize', {
      ...INITIALIZE_PARAMS,
      protocolVersion: '2025-03-26',
    });
    expect(answer.body?.result?.protocolVersion).toBe('2025-03-26');
  });

  it('Transports §Session Management: initialize assigns an Mcp-Session-Id the client sends back', () => {
    expect(life.sessionId).toMatch(/^mcp_ses_/);
    const later = sdk.exchanges.filter(
      (e) => e.url.pathname === '/api/service/mcp' && e.body?.includes('"tools/list"'),
    );
    expect(later[0]?.headers.get('mcp-session-id')).toBe(life.sessionId);
  });

  it('Transports §Streamable HTTP: a request without MCP-Protocol-Version is served (the revision defined none)', async () => {
    const { access_token } = await tokensFor(host, 'headerless');
    const listed = await rpc(host, access_token, 'tools/list');
    expect(listed.status).toBe(200);
    expect(listed.body?.result?.tools.length).toBeGreaterThan(0);
    expect(life.tools.map((tool) => tool.name)).toContain('list_notes');
    expect(life.listed.structuredContent).toEqual({ notes: ['first', 'second'], tag: null });
  });
});
