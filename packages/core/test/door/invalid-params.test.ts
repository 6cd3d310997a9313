/**
 * Malformed params of the methods the door serves answer -32602 Invalid params with a message a
 * client can act on (`params.protocolVersion: ...`), never -32603 Internal error nor a dump of
 * schema issues.
 *
 * @see JSON-RPC 2.0 §5.1 "Error object"; MCP 2025-11-25 "Basic" §Error Codes
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import { INITIALIZE_PARAMS, tokensFor } from './support/oauth-flow.js';
import { sdkClient } from './support/sdk-client.js';

let store: TestStore;
let host: DoorHost;
let token: string;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
  token = (await tokensFor(host, 'params-user')).access_token;
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

/** One JSON-RPC request with `params` as given (`undefined`: none at all); its answer, parsed. */
async function send(method: string, params?: unknown) {
  const response = await fetch(`${host.url}/api/service/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': INITIALIZE_PARAMS.protocolVersion,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, ...(params === undefined ? {} : { params }) }),
  });
  const raw = await response.text();
  const data = raw.split('\n').filter((line) => line.startsWith('data: '));
  const body = JSON.parse(data.length > 0 ? data[data.length - 1]!.slice(6) : raw);
  return { status: response.status, session: response.headers.get('mcp-session-id'), body };
}

describe('malformed params', () => {
  it('answers initialize with bad or missing params with -32602 naming each field, and opens no session', async () => {
    const cases: [unknown, string[]][] = [
      [
        { protocolVersion: 5, capabilities: [], clientInfo: 'x' },
        ['params.protocolVersion: ', 'params.capabilities: ', 'params.clientInfo: '],
      ],
      [{}, ['params.protocolVersion: ', 'params.capabilities: ', 'params.clientInfo: ']],
      [undefined, ['params: ']],
    ];
    for (const [params, fields] of cases) {
      const label = JSON.stringify(params) ?? 'no params';
      const answer = await send('initialize', params);
      expect(answer.status, label).toBe(200);
      expect(answer.session, label).toBeNull();
      expect(answer.body.id, label).toBe(7);
      expect(answer.body.error.code, label).toBe(-32602);
      const message: string = answer.body.error.message;
      expect(message, label).toMatch(/^Invalid params: /);
      expect(message, label).not.toMatch(/[[{]/);
      for (const field of fields) expect(message, label).toContain(field);
    }
    const stringExpected = await send('initialize', { ...INITIALIZE_PARAMS, protocolVersion: 5 });
    expect(stringExpected.body.error.message).toMatch(/^Invalid params: params\.protocolVersion: .*string/);
  });

  it('answers tools/list with a cursor that is no string, or one it never issued, with -32602', async () => {
    const answer = await send('tools/list', { cursor: 5 });
    expect(answer.body.error.code).toBe(-32602);
    expect(answer.body.error.message).toMatch(/^Invalid params: params\.cursor: [^[{]*$/);
    // A well-formed list still answers the menu, all of it: no next cursor.
    const menu = (await send('tools/list', {})).body.result;
    expect(menu.tools.length).toBeGreaterThan(0);
    expect(menu.nextCursor).toBeUndefined();
    // So any cursor is one this server never issued: refused, not answered with the first page again.
    for (const cursor of ['', 'page-2', 'eyJvZmZzZXQiOjF9']) {
      const refused = await send('tools/list', { cursor });
      expect(refused.body.error.code, cursor).toBe(-32602);
      expect(refused.body.error.message, cursor).toBe(
        'Invalid params: params.cursor: this server lists every tool at once and issues no cursor',
      );
    }
  });

  it('answers tools/call with bad params with -32602 naming the field, not a dump of schema issues', async () => {
    const before = host.executions.length;
    for (const [params, field] of [
      [{ name: 5 }, 'params.name: '],
      [{}, 'params.name: '],
      [{ name: 'list_notes', arguments: [] }, 'params.arguments: '],
      [{ name: 'list_notes', arguments: 'x' }, 'params.arguments: '],
    ] as const) {
      const answer = await send('tools/call', params);
      expect(answer.body.error.code, JSON.stringify(params)).toBe(-32602);
      expect(answer.body.error.message, JSON.stringify(params)).toMatch(/^Invalid params: /);
      expect(answer.body.error.message, JSON.stringify(params)).toContain(field);
      expect(answer.body.error.message, JSON.stringify(params)).not.toMatch(/[[{]/);
    }
    expect(host.executions.length).toBe(before);
  });

  it('reaches the MCP SDK client as an McpError with code -32602 and the same message', async () => {
    const { client } = await sdkClient(host).signIn('sdk-params-user');
    const refused = await client
      .request(
        { method: 'tools/list', params: { cursor: 5 as unknown as string } },
        z.object({}).passthrough(),
      )
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).code).toBe(-32602);
    expect((refused as McpError).message).toMatch(/Invalid params: params\.cursor: [^[{]*$/);
    // The connection stays usable.
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  });
});
