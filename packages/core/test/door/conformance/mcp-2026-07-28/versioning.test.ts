/**
 * MCP 2026-07-28 versioning against the door, which speaks the `initialize` revisions up to
 * 2025-11-25 (a legacy server in that revision's terms): a modern request is refused with a 400
 * that carries no modern error, so a client of both eras falls back to `initialize`; `initialize`
 * asking for 2026-07-28 is answered with the newest revision the door speaks. The real SDK client
 * runs the whole lifecycle asking for 2026-07-28.
 */
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { INITIALIZE_PARAMS, rpc, tokensFor } from '../../support/oauth-flow.js';
import { type Lifecycle, runLifecycle, type SdkClient, sdkClient } from '../../support/sdk-client.js';

/** The error codes 2026-07-28 defines (HeaderMismatch, MissingRequiredClientCapability, UnsupportedProtocolVersion). */
const MODERN_ERROR_CODES = [-32020, -32021, -32022];

let store: TestStore;
let host: DoorHost;
let sdk: SdkClient;
let life: Lifecycle;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
  sdk = sdkClient(host, { protocolVersion: '2026-07-28' });
  life = await runLifecycle(host, sdk, 'user-2026-07-28');
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

describe('MCP 2026-07-28 versioning', () => {
  it('§Backward Compatibility: a modern request gets a 400 without a modern error, so the client falls back', async () => {
    const { access_token } = await tokensFor(host, 'modern-2026-07-28');
    const modern = await rpc(
      host,
      access_token,
      'tools/list',
      { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
    );
    expect(modern.status).toBe(400);
    expect(modern.body).toMatchObject({ jsonrpc: '2.0', id: null });
    expect(MODERN_ERROR_CODES).not.toContain(modern.body?.error?.code);
    // The fallback: initialize, which names the revision the door speaks.
    const fallback = await rpc(
      host,
      access_token,
      'initialize',
      { ...INITIALIZE_PARAMS, protocolVersion: '2026-07-28' },
      { 'mcp-protocol-version': '2026-07-28' },
    );
    expect(fallback.status).toBe(200);
    expect(fallback.body?.result?.protocolVersion).toBe('2025-11-25');
  });

  it('§Compatibility Matrix: the SDK client asking 2026-07-28 is answered the newest revision and works', () => {
    expect(LATEST_PROTOCOL_VERSION).toBe('2025-11-25');
    expect(life.negotiated).toBe(LATEST_PROTOCOL_VERSION);
    const later = sdk.exchanges.filter((e) => e.body?.includes('"tools/'));
    for (const request of later)
      expect(request.headers.get('mcp-protocol-version')).toBe(LATEST_PROTOCOL_VERSION);
    expect(life.tools.map((tool) => tool.name)).toContain('list_notes');
    expect(life.listed.structuredContent).toEqual({ notes: ['first', 'second'], tag: null });
  });

  it('§Authorization Flow Steps: discovery, registration, authorization, refresh and revocation still hold', () => {
    const prm = sdk.exchanges.find((e) => e.json?.resource);
    expect(prm?.json?.scopes_supported).toEqual(['read', 'write']);
    expect(sdk.provider.authorizationUrl?.searchParams.get('resource')).toBe(`${host.url}/api/service/mcp`);
    expect(sdk.provider.authorizationUrl?.searchParams.get('scope')).toBe('read write');
    expect(life.afterRefresh.structuredContent).toEqual({ created: 'after refresh' });
    expect(life.refreshTokens[1]).not.toBe(life.refreshTokens[0]);
    expect(life.afterRevoke).toBeInstanceOf(Error);
  });
});
