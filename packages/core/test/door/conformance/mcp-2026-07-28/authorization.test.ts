/**
 * MCP 2026-07-28 authorization on the resource side: `offline_access` is never a resource scope
 * (refresh tokens are the authorization server's business), an `insufficient_scope` challenge names
 * every scope the operation needs at once, and a broader scope implies the narrower one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { authorizeCode, exchange, rpc } from '../../support/oauth-flow.js';

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

const tokenWith = async (subject: string, scope: string) =>
  (await exchange(host, await authorizeCode(host, subject, undefined, { scope }))).access_token;

const scopeOf = (response: { headers: Headers }) =>
  /(?:^|[ ,])scope="([^"]*)"/.exec(response.headers.get('www-authenticate') ?? '')?.[1];

describe('MCP 2026-07-28 scopes on the resource side', () => {
  it('§Refresh Tokens: offline_access is in neither the protected-resource metadata nor any challenge', async () => {
    const origin = new URL(host.url).origin;
    for (const url of [
      `${origin}/.well-known/oauth-protected-resource/api/service/mcp`,
      `${host.url}/api/service/mcp/.well-known/oauth-protected-resource`,
    ]) {
      const metadata = await (await fetch(url)).json();
      expect(metadata.scopes_supported, url).toEqual(['read', 'write']);
    }
    const reader = await tokenWith('offline-2026-07-28', 'read');
    const challenges = [
      await rpc(host, null, 'tools/list'),
      await rpc(host, 'mcp_at_unknown', 'tools/list'),
      await rpc(host, reader, 'tools/call', { name: 'delete_note', arguments: { id: '1' } }),
    ];
    expect(challenges.map((response) => response.status)).toEqual([401, 401, 403]);
    for (const response of challenges) {
      expect(scopeOf(response)).toBeDefined();
      expect(scopeOf(response)!.split(' ')).not.toContain('offline_access');
    }
  });

  it('§Runtime Insufficient Scope Errors: one challenge names every scope the call needs, and they suffice', async () => {
    const reader = await tokenWith('single-2026-07-28', 'read');
    const refused = await rpc(host, reader, 'tools/call', { name: 'create_note', arguments: { text: 'x' } });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect(refused.headers.get('www-authenticate')).toContain('resource_metadata="');
    // A token with exactly the challenged scopes runs the call: no second, incremental challenge.
    const stepped = await tokenWith('single-2026-07-28', scopeOf(refused)!);
    const created = await rpc(host, stepped, 'tools/call', { name: 'create_note', arguments: { text: 'x' } });
    expect(created.status).toBe(200);
    expect(created.body?.result?.structuredContent).toEqual({ created: 'x' });
  });

  it('§Step-Up Authorization Flow: a broader scope implies the narrower (write runs read tools)', async () => {
    const writer = await tokenWith('writer-2026-07-28', 'write');
    const listed = await rpc(host, writer, 'tools/call', { name: 'list_notes', arguments: {} });
    expect(listed.status).toBe(200);
    expect(listed.body?.result?.structuredContent).toEqual({ notes: ['first', 'second'], tag: null });
  });
});
