/**
 * MCP 2025-11-25 authorization on the resource side, over raw HTTP: the 401 challenge names the
 * protected-resource metadata and the scopes to ask for; a valid token without the scope a
 * `tools/call` needs gets a 403 `insufficient_scope` challenge instead of a tool result.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { authorizeCode, exchange, rpc } from '../../support/oauth-flow.js';

let store: TestStore;
let host: DoorHost;
let metadataUrl: string;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
  metadataUrl = `${new URL(host.url).origin}/.well-known/oauth-protected-resource/api/service/mcp`;
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

const tokenWith = async (subject: string, scope: string) =>
  (await exchange(host, await authorizeCode(host, subject, undefined, { scope }))).access_token;

/** The parameters of a `WWW-Authenticate: Bearer` challenge. */
const challengeOf = (response: { headers: Headers }) => {
  const header = response.headers.get('www-authenticate') ?? '';
  expect(header).toMatch(/^Bearer /);
  return Object.fromEntries([...header.matchAll(/(\w+)="([^"]*)"/g)].map(([, name, value]) => [name, value]));
};

describe('MCP 2025-11-25 authorization challenges', () => {
  it('§Protected Resource Metadata Discovery Requirements: the 401 carries resource_metadata and scope', async () => {
    for (const token of [null, 'mcp_at_unknown']) {
      const refused = await rpc(host, token, 'tools/list');
      expect(refused.status).toBe(401);
      expect(challengeOf(refused)).toMatchObject({ resource_metadata: metadataUrl, scope: 'read write' });
    }
    const metadata = await (await fetch(metadataUrl)).json();
    expect(metadata.scopes_supported).toEqual(['read', 'write']);
  });

  it('§Runtime Insufficient Scope Errors: a tools/call beyond the token is a 403 insufficient_scope challenge', async () => {
    const reader = await tokenWith('reader-2025-11-25', 'read');
    const before = host.executions.length;
    for (const [tool, args] of [
      ['create_note', { text: 'x' }],
      ['delete_note', { id: '1' }],
      ['ungraded_tool', {}],
    ] as const) {
      const refused = await rpc(host, reader, 'tools/call', { name: tool, arguments: args });
      expect(refused.status, tool).toBe(403);
      expect(challengeOf(refused), tool).toEqual({
        resource_metadata: metadataUrl,
        scope: 'write',
        error: 'insufficient_scope',
        error_description: `${tool} needs the write scope, which this connection was not granted`,
      });
      expect(refused.body, tool).toEqual({
        error: 'insufficient_scope',
        error_description: `${tool} needs the write scope, which this connection was not granted`,
      });
    }
    expect(host.executions.length).toBe(before);
  });

  it('§Runtime Insufficient Scope Errors: tools/list and covered calls stay 200; unknown tools stay -32602', async () => {
    const reader = await tokenWith('lister-2025-11-25', 'read');
    const listed = await rpc(host, reader, 'tools/list');
    expect(listed.status).toBe(200);
    expect(listed.body?.result?.tools.map((t: { name: string }) => t.name)).toEqual([
      'list_notes',
      'create_note',
      'delete_note',
      'archive_note',
      'ungraded_tool',
      'failing_tool',
    ]);
    expect((await rpc(host, reader, 'tools/call', { name: 'list_notes', arguments: {} })).status).toBe(200);
    const unknown = await rpc(host, reader, 'tools/call', { name: 'no_such_tool', arguments: {} });
    expect(unknown.status).toBe(200);
    expect(unknown.body?.error?.code).toBe(-32602);
  });
});
