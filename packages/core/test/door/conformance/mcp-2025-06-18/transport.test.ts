/**
 * MCP 2025-06-18 transport rules the door enforces itself, over raw HTTP: the MCP-Protocol-Version
 * header (a version the server does not speak is a 400), version negotiation in `initialize`, and
 * one JSON-RPC message per request (this revision removed batching).
 */
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../../support/stores.js';
import { type DoorHost, startDoorHost } from '../../support/door-host.js';
import { INITIALIZE_PARAMS, rpc, tokensFor } from '../../support/oauth-flow.js';

let store: TestStore;
let host: DoorHost;
let token: string;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
  token = (await tokensFor(host, 'transport-2025-06-18')).access_token;
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

const post = (body: string, headers: Record<string, string> = {}) =>
  fetch(`${host.url}/api/service/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body,
  });

describe('MCP 2025-06-18 protocol version', () => {
  it('Transports §Protocol Version Header: an invalid or unsupported MCP-Protocol-Version is answered 400', async () => {
    for (const version of ['2099-01-01', '2026-07-28', 'not-a-version', '']) {
      const refused = await rpc(host, token, 'tools/list', {}, { 'mcp-protocol-version': version });
      expect(refused.status, version).toBe(400);
      expect(refused.body, version).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
      expect(refused.body?.error?.message, version).toContain('2025-06-18');
    }
  });

  it('Transports §Protocol Version Header: DELETE with an unsupported version is refused and the session lives on', async () => {
    const opened = await rpc(host, token, 'initialize', INITIALIZE_PARAMS);
    const session = opened.headers.get('mcp-session-id')!;
    const refused = await fetch(`${host.url}/api/service/mcp`, {
      method: 'DELETE',
      headers: {
        authorization: `Bearer ${token}`,
        'mcp-session-id': session,
        'mcp-protocol-version': '1999-01-01',
      },
    });
    expect(refused.status).toBe(400);
    const still = await rpc(
      host,
      token,
      'tools/list',
      {},
      { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
    );
    expect(still.status).toBe(200);
  });

  it('Transports §Protocol Version Header: each version the server speaks is accepted in the header', async () => {
    for (const version of ['2025-03-26', '2025-06-18', '2025-11-25']) {
      const listed = await rpc(host, token, 'tools/list', {}, { 'mcp-protocol-version': version });
      expect(listed.status, version).toBe(200);
      expect(listed.body?.result?.tools.length, version).toBeGreaterThan(0);
    }
  });

  it('Lifecycle §Version Negotiation: a supported version is answered in kind, any other with the newest', async () => {
    const cases: Array<[string, string]> = [
      ['2025-03-26', '2025-03-26'],
      ['2025-06-18', '2025-06-18'],
      ['2025-11-25', '2025-11-25'],
      ['2026-07-28', LATEST_PROTOCOL_VERSION],
      ['1999-01-01', LATEST_PROTOCOL_VERSION],
    ];
    expect(LATEST_PROTOCOL_VERSION).toBe('2025-11-25');
    for (const [asked, answered] of cases) {
      // initialize negotiates in its body: a header naming a version the server lacks does not stop it.
      const answer = await rpc(
        host,
        token,
        'initialize',
        { ...INITIALIZE_PARAMS, protocolVersion: asked },
        { 'mcp-protocol-version': asked },
      );
      expect(answer.status, asked).toBe(200);
      expect(answer.body?.result?.protocolVersion, asked).toBe(answered);
    }
  });
});

describe('MCP 2025-06-18 messages', () => {
  it('Transports §Sending Messages to the Server: a JSON-RPC batch is refused 400 -32600 without an id, and nothing runs', async () => {
    const before = host.executions.length;
    const batch = JSON.stringify([
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'create_note', arguments: { text: 'a' } },
      },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ]);
    for (const body of [batch, '[]', `[${JSON.stringify({ ...INITIALIZE_PARAMS })}]`]) {
      const refused = await post(body);
      expect(refused.status, body).toBe(400);
      expect(await refused.json(), body).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: 'Invalid Request: JSON-RPC batches are not supported' },
      });
    }
    expect(host.executions.length).toBe(before);
  });
});
