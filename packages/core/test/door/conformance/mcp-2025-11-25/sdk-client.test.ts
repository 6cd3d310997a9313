/**
 * MCP 2025-11-25 as its clients meet the door: the real SDK client runs the whole lifecycle asking
 * for 2025-11-25 (the SDK's newest), steps up on an `insufficient_scope` challenge, and reads the
 * authorization-server metadata it is offered.
 */
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import {
  approve,
  type Lifecycle,
  runLifecycle,
  type SdkClient,
  sdkClient,
} from '../../support/sdk-client.js';

let store: TestStore;
let host: DoorHost;
let sdk: SdkClient;
let life: Lifecycle;
let mcp: string;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
  mcp = `${host.url}/api/service/mcp`;
  sdk = sdkClient(host, { protocolVersion: '2025-11-25' });
  life = await runLifecycle(host, sdk, 'user-2025-11-25');
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

describe('MCP 2025-11-25 with the SDK client', () => {
  it('Lifecycle §Version Negotiation: a client asking 2025-11-25 is answered 2025-11-25 and sends it on', () => {
    expect(life.negotiated).toBe('2025-11-25');
    const later = sdk.exchanges.filter((e) => e.body?.includes('"tools/'));
    expect(later.length).toBeGreaterThanOrEqual(3);
    for (const request of later) expect(request.headers.get('mcp-protocol-version')).toBe('2025-11-25');
  });

  it('§Protected Resource Metadata Discovery Requirements: discovery starts from the 401 challenge', () => {
    const first = sdk.exchanges[0]!;
    expect(first).toMatchObject({ method: 'POST', status: 401 });
    const discovery = sdk.exchanges.filter((e) => e.url.pathname.startsWith('/.well-known/'));
    expect(discovery.map((e) => [e.url.pathname, e.status]).slice(0, 2)).toEqual([
      ['/.well-known/oauth-protected-resource/api/service/mcp', 200],
      ['/.well-known/oauth-authorization-server/api/service/mcp', 200],
    ]);
  });

  it('§Authorization Flow Steps: registration, PKCE authorization with resource, tools, refresh and revocation', () => {
    expect(sdk.provider.information?.client_id).toMatch(/^mcp_client_/);
    const authorization = sdk.provider.authorizationUrl!;
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorization.searchParams.get('resource')).toBe(mcp);
    expect(life.tools.map((tool) => tool.name)).toContain('create_note');
    expect(life.listed.structuredContent).toEqual({ notes: ['first', 'second'], tag: null });
    expect(life.afterRefresh.structuredContent).toEqual({ created: 'after refresh' });
    expect(life.afterRevoke).toBeInstanceOf(Error);
  });

  it('§Client ID Metadata Documents: the metadata flag, when the door advertises it, is true', () => {
    const metadata = sdk.exchanges.find((e) => e.json?.issuer === mcp)?.json;
    expect(metadata).toBeDefined();
    // Advertised only once the door accepts URL client ids; registration works either way.
    if (metadata && 'client_id_metadata_document_supported' in metadata) {
      expect(metadata.client_id_metadata_document_supported).toBe(true);
    }
  });

  it('§Step-Up Authorization Flow: the SDK client answers the 403 with an authorization for the challenged scope', async () => {
    const stepper = sdkClient(host, { protocolVersion: '2025-11-25' });
    // A client that asks only for read.
    const { client, transport } = await stepper.signIn('stepper', (url) => {
      url.searchParams.set('scope', 'read');
      return approve(host, url, 'stepper');
    });
    expect((await client.callTool({ name: 'list_notes', arguments: {} })).isError).toBeFalsy();
    // A refresh never widens a grant, and the SDK refreshes before it re-authorizes: this client
    // keeps no refresh token, so the challenge leads straight to a new authorization.
    stepper.provider.saved = { ...stepper.provider.saved!, refresh_token: undefined };
    await expect(client.callTool({ name: 'create_note', arguments: { text: 'stepped up' } })).rejects.toThrow(
      UnauthorizedError,
    );
    const challenged = stepper.exchanges.findLast((e) => e.status === 403);
    expect(challenged?.body).toContain('create_note');
    const stepUp = stepper.provider.authorizationUrl!;
    expect(stepUp.searchParams.get('scope')).toBe('write');
    await transport.finishAuth(await approve(host, stepUp, 'stepper'));
    const created = await client.callTool({ name: 'create_note', arguments: { text: 'stepped up' } });
    expect(created.structuredContent).toEqual({ created: 'stepped up' });
    await client.close();
  });
});
