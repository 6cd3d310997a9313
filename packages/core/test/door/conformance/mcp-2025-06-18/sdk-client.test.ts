/**
 * MCP 2025-06-18 as its clients meet the door: the MCP server is an OAuth resource server whose
 * 401 names its protected-resource metadata, which names the authorization server; clients send
 * the RFC 8707 `resource` of the MCP URL; the negotiated version rides in MCP-Protocol-Version.
 * The real SDK client runs the whole lifecycle asking for 2025-06-18.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { type Lifecycle, runLifecycle, type SdkClient, sdkClient } from '../../support/sdk-client.js';

let store: TestStore;
let host: DoorHost;
let sdk: SdkClient;
let life: Lifecycle;
let mcp: string;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
  mcp = `${host.url}/api/service/mcp`;
  sdk = sdkClient(host, { protocolVersion: '2025-06-18' });
  life = await runLifecycle(host, sdk, 'user-2025-06-18');
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

const mcpPosts = () =>
  sdk.exchanges.filter((e) => e.url.pathname === '/api/service/mcp' && e.method === 'POST');

describe('MCP 2025-06-18 authorization', () => {
  it('§Authorization Server Location: the 401 names the protected-resource metadata, which names the door', () => {
    const metadataUrl = `${new URL(host.url).origin}/.well-known/oauth-protected-resource/api/service/mcp`;
    expect(mcpPosts()[0]).toMatchObject({ status: 401 });
    const prm = sdk.exchanges.find((e) => e.url.href === metadataUrl);
    expect(prm?.status).toBe(200);
    expect(prm?.json).toMatchObject({ resource: mcp, authorization_servers: [mcp] });
  });

  it('§Server Metadata Discovery: RFC 8414 metadata at the issuer with its path inserted', () => {
    const metadata = sdk.exchanges.find((e) => e.json?.issuer === mcp);
    expect(metadata?.url.pathname).toBe('/.well-known/oauth-authorization-server/api/service/mcp');
    expect(metadata?.json?.code_challenge_methods_supported).toEqual(['S256']);
  });

  it('§Dynamic Client Registration: the SDK client registers at the advertised endpoint', () => {
    expect(sdk.exchanges.find((e) => e.url.href === `${mcp}/register`)?.status).toBe(201);
    expect(sdk.provider.information?.client_id).toMatch(/^mcp_client_/);
  });

  it('§Resource Parameter Implementation: authorization, token and refresh requests name the MCP URL', () => {
    expect(sdk.provider.authorizationUrl?.searchParams.get('resource')).toBe(mcp);
    const tokenRequests = sdk.exchanges.filter((e) => e.url.href === `${mcp}/token`);
    expect(tokenRequests.map((e) => new URLSearchParams(e.body ?? '').get('grant_type'))).toEqual([
      'authorization_code',
      'refresh_token',
      'refresh_token',
    ]);
    for (const request of tokenRequests)
      expect(new URLSearchParams(request.body ?? '').get('resource')).toBe(mcp);
    expect(tokenRequests.slice(0, 2).map((e) => e.status)).toEqual([200, 200]);
  });

  it('§Token Handling: refreshes an expired token, and a revoked grant is answered 401', () => {
    expect(life.afterRefresh.structuredContent).toEqual({ created: 'after refresh' });
    expect(life.refreshTokens[1]).not.toBe(life.refreshTokens[0]);
    expect(mcpPosts().at(-1)?.status).toBe(401);
    expect(life.afterRevoke).toBeInstanceOf(Error);
  });
});

describe('MCP 2025-06-18 lifecycle and transport', () => {
  it('Lifecycle §Version Negotiation: a client asking 2025-06-18 is answered 2025-06-18', () => {
    expect(life.negotiated).toBe('2025-06-18');
    expect(life.tools.map((tool) => tool.name)).toContain('list_notes');
    expect(life.listed.structuredContent).toEqual({ notes: ['first', 'second'], tag: null });
  });

  it('Transports §Protocol Version Header: every request after initialize carries the negotiated version', () => {
    const afterInitialize = mcpPosts().filter((e) => e.status !== 401 && !e.body?.includes('"initialize"'));
    expect(afterInitialize.length).toBeGreaterThanOrEqual(4);
    for (const request of afterInitialize)
      expect(request.headers.get('mcp-protocol-version')).toBe('2025-06-18');
  });
});
