/**
 * The MCP transport behind bearer authentication: the principal re-resolved on every request (a
 * null result ends the user's sessions), sessions bound to one subject and client, the tool menu
 * and its curation, and calls that fail closed.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { listAudit } from '../../src/agent/audit.js';
import { GrantStore as ApprovalGrants } from '../../src/agent/grants.js';
import { ClientStore } from '../../src/door/storage/clients.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { testService } from '../wire/support/wire.js';
import { type DoorHost, startDoorHost, USER_COOKIE } from './support/door-host.js';
import {
  authorizeCode,
  codeExchange,
  exchange,
  INITIALIZE_PARAMS,
  rpc,
  type TokenSet,
  tokenRequest,
  tokensFor,
} from './support/oauth-flow.js';

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

const call = (token: string, name: string, args: unknown = {}, headers: Record<string, string> = {}) =>
  rpc(host, token, 'tools/call', { name, arguments: args }, headers);

const initialize = async (token: string) => {
  const response = await rpc(host, token, 'initialize', INITIALIZE_PARAMS);
  expect(response.status).toBe(200);
  return response.headers.get('mcp-session-id')!;
};

describe('bearer authentication', () => {
  it('answers 401 with invalid_token for unknown, malformed and non-Bearer credentials', async () => {
    for (const authorization of [
      'Bearer mcp_at_unknown',
      'Bearer ',
      'Basic abc',
      `Bearer ${'x'.repeat(9000)}`,
    ]) {
      const response = await fetch(`${host.url}/api/service/mcp`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(response.status, authorization.slice(0, 20)).toBe(401);
      expect(response.headers.get('www-authenticate')).toContain('resource_metadata=');
    }
  });

  it('re-resolves the principal on every request: a user who no longer resolves loses tokens and sessions', async () => {
    const tokens = await tokensFor(host, 'doomed-user');
    const sessionId = await initialize(tokens.access_token);
    host.users.delete('doomed-user');
    const refused = await rpc(host, tokens.access_token, 'tools/list', {}, { 'mcp-session-id': sessionId });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
    // The account comes back: the old grant and its session stay dead.
    host.users.set('doomed-user', { subject: 'doomed-user' });
    expect((await rpc(host, tokens.access_token, 'tools/list')).status).toBe(401);
    const fresh = await tokensFor(host, 'doomed-user');
    expect(
      (await rpc(host, fresh.access_token, 'tools/list', {}, { 'mcp-session-id': sessionId })).status,
    ).toBe(404);
  });
});

describe('sessions', () => {
  it('issues a session on initialize and binds it to one subject and one client', async () => {
    const alice = await tokensFor(host, 'alice');
    const sessionId = await initialize(alice.access_token);
    expect(sessionId).toMatch(/^mcp_ses_/);
    expect(
      (await rpc(host, alice.access_token, 'tools/list', {}, { 'mcp-session-id': sessionId })).status,
    ).toBe(200);

    const bob = await tokensFor(host, 'bob');
    const stolen = await rpc(host, bob.access_token, 'tools/list', {}, { 'mcp-session-id': sessionId });
    expect(stolen.status).toBe(404);
    expect(stolen.body?.error?.message).toBe('Session not found');

    // Same user, another client: not this session either.
    const aliceElsewhere = await tokensFor(host, 'alice');
    expect(
      (await rpc(host, aliceElsewhere.access_token, 'tools/list', {}, { 'mcp-session-id': sessionId }))
        .status,
    ).toBe(404);
  });

  it('ends a session on DELETE', async () => {
    const tokens = await tokensFor(host, 'carol');
    const sessionId = await initialize(tokens.access_token);
    const ended = await fetch(`${host.url}/api/service/mcp`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'mcp-session-id': sessionId },
    });
    expect(ended.status).toBe(200);
    expect(
      (await rpc(host, tokens.access_token, 'tools/list', {}, { 'mcp-session-id': sessionId })).status,
    ).toBe(404);
  });

  it('answers GET (no server-initiated stream) with 405 and malformed JSON with a 400, never a 500', async () => {
    const tokens = await tokensFor(host, 'dave');
    const get = await fetch(`${host.url}/api/service/mcp`, {
      headers: { authorization: `Bearer ${tokens.access_token}`, accept: 'text/event-stream' },
    });
    expect(get.status).toBe(405);
    // A preflight offers only what is served: GET is always 405 here.
    const preflight = await fetch(`${host.url}/api/service/mcp`, {
      method: 'OPTIONS',
      headers: { 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('POST, DELETE, OPTIONS');
    const malformed = await fetch(`${host.url}/api/service/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{"jsonrpc":',
    });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error.code).toBe(-32700);
  });
  it('answers the MCP URL with a trailing slash with a 404 naming the endpoint, serving nothing there', async () => {
    const tokens = await tokensFor(host, 'frank');
    const response = await fetch(`${host.url}/api/service/mcp/`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: INITIALIZE_PARAMS }),
    });
    expect(response.status).toBe(404);
    expect(response.headers.get('mcp-session-id')).toBeNull();
    expect(await response.json()).toEqual({
      error: 'not_found',
      error_description: `No MCP endpoint here: the MCP server's URL is ${host.url}/api/service/mcp`,
    });
  });

  it('answers JSON that is no JSON-RPC message with -32600 Invalid Request, echoing a valid id', async () => {
    const tokens = await tokensFor(host, 'erin');
    const cases: [string, string | number | null][] = [
      ['{}', null],
      ['null', null],
      ['true', null],
      ['5', null],
      ['{"jsonrpc":"1.0","id":2,"method":"tools/list"}', 2],
      ['{"id":2,"method":"tools/list"}', 2],
      ['{"jsonrpc":"2.0","id":1.5,"method":"ping"}', null],
      ['{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', null],
      ['{"jsonrpc":"2.0","id":"nine","method":5}', 'nine'],
    ];
    for (const [body, id] of cases) {
      const response = await fetch(`${host.url}/api/service/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tokens.access_token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body,
      });
      expect(response.status, body).toBe(400);
      const answer = await response.json();
      expect(answer.error.code, body).toBe(-32600);
      expect(answer.id, body).toBe(id);
    }
  });
});

describe('tool calls', () => {
  it('answers structured results and reports tool failures and bad input as tool errors', async () => {
    const { access_token } = await tokensFor(host);
    const ok = await call(access_token, 'create_note', { text: 'hello' });
    expect(ok.body?.result).toEqual({
      content: [{ type: 'text', text: '{"created":"hello"}' }],
      structuredContent: { created: 'hello' },
    });
    const text = await call(access_token, 'ungraded_tool');
    expect(text.body?.result).toEqual({ content: [{ type: 'text', text: 'plain text result' }] });
    const invalid = await call(access_token, 'create_note', { text: 42 });
    expect(invalid.body?.result?.isError).toBe(true);
    expect(invalid.body?.result?.structuredContent?.error?.code).toBe('validation');
    const failing = await call(access_token, 'failing_tool');
    expect(failing.body?.result?.structuredContent?.error).toEqual({
      code: 'tool-failed',
      message: 'the notes service is down',
    });
  });

  it('answers malformed tools/call params with -32602 Invalid params, not an internal error', async () => {
    const { access_token } = await tokensFor(host);
    const before = host.executions.length;
    for (const params of [
      { name: 5 },
      {},
      { name: 'lookup', arguments: [] },
      { name: 'lookup', arguments: 'x' },
    ]) {
      const answer = await rpc(host, access_token, 'tools/call', params);
      expect(answer.status, JSON.stringify(params)).toBe(200);
      expect(answer.body?.error?.code, JSON.stringify(params)).toBe(-32602);
    }
    expect(host.executions.length).toBe(before);
  });

  it('answers unknown and off-menu tools with the same not-found error', async () => {
    const { access_token } = await tokensFor(host);
    const unknown = await call(access_token, 'no_such_tool');
    const internal = await call(access_token, 'internal_tool');
    const disabled = await call(access_token, 'disabled_tool');
    expect(unknown.body?.error?.code).toBe(-32602);
    expect(unknown.body?.error?.message).toBe('MCP error -32602: Tool no_such_tool not found');
    expect(internal.body?.error).toEqual({
      ...unknown.body?.error,
      message: unknown.body?.error?.message.replace('no_such_tool', 'internal_tool'),
    });
    expect(disabled.body?.error?.message).toMatch(/Tool disabled_tool not found$/);
    expect(host.executions.some((e) => e.tool === 'internal_tool' || e.tool === 'disabled_tool')).toBe(false);
  });

  it('answers a call its scopes do not cover with a 403 step-up challenge naming the scope it needs', async () => {
    const flow = await authorizeCode(host, 'reader', undefined, { scope: 'read' });
    const { access_token } = await exchange(host, flow);
    expect((await call(access_token, 'list_notes')).body?.result?.isError).toBeFalsy();
    const before = host.executions.length;
    for (const tool of ['create_note', 'delete_note', 'ungraded_tool']) {
      const refused = await call(access_token, tool, tool === 'create_note' ? { text: 'x' } : { id: '1' });
      expect(refused.status, tool).toBe(403);
      expect(refused.headers.get('www-authenticate'), tool).toBe(
        `Bearer resource_metadata="${host.url}/.well-known/oauth-protected-resource/api/service/mcp", ` +
          `scope="write", error="insufficient_scope", error_description="${tool} needs the write scope, which this connection was not granted"`,
      );
      expect(refused.body, tool).toMatchObject({ error: 'insufficient_scope' });
    }
    expect(host.executions.length).toBe(before);
    expect(
      host.logs.filter((l) => l.fields?.outcome === 'insufficient-scope').map((l) => l.fields?.tool),
    ).toEqual(['create_note', 'delete_note', 'ungraded_tool']);
    // The menu is the same whatever the scopes: what a client lacks it learns by calling.
    const listed = await rpc(host, access_token, 'tools/list');
    expect(listed.status).toBe(200);
    expect(listed.body?.result?.tools.map((t: { name: string }) => t.name)).toContain('create_note');
  });

  it('fails closed when the consent record is gone', async () => {
    const tokens = await tokensFor(host, 'withdrawn');
    // The record alone, its tokens left live (withdrawConsent would revoke them too).
    await store.db
      .deleteFrom('door_consents')
      .where('subject', '=', 'withdrawn')
      .where('client_id', '=', tokens.client.clientId)
      .execute();
    const before = host.executions.length;
    const refused = await call(tokens.access_token, 'list_notes');
    expect(refused.body?.result?.structuredContent?.error?.code).toBe('forbidden');
    expect(host.executions.length).toBe(before);
  });

  it('never forwards the inbound bearer: tools see only what actAs minted', async () => {
    const tokens = await tokensFor(host, 'eve');
    await call(tokens.access_token, 'list_notes');
    const execution = host.executions.at(-1)!;
    expect(execution.headers).toEqual({ authorization: 'Bearer host-session-of-eve' });
    expect(JSON.stringify(host.actAsCalls)).not.toContain(tokens.access_token);
  });

  it('answers not-implemented when the host has no actAs', async () => {
    const bare = await startDoorHost(store, { actAs: null });
    try {
      const tokens = await tokensFor(bare, 'frank');
      const result = await rpc(bare, tokens.access_token, 'tools/call', {
        name: 'list_notes',
        arguments: {},
      });
      expect(result.body?.result?.isError).toBe(true);
      expect(result.body?.result?.structuredContent?.error?.code).toBe('not-implemented');
      expect(bare.executions).toHaveLength(0);
    } finally {
      await bare.close();
    }
  });

  it('fails closed when actAs throws or the principal is another user', async () => {
    const refusing = await startDoorHost(store, {
      actAs: async () => {
        throw new Error('no token for you');
      },
    });
    const swapped = await startDoorHost(store, {
      oauth: { principal: (subject) => ({ subject: `${subject}-impostor` }) },
    });
    try {
      const t1 = await tokensFor(refusing, 'gina');
      const r1 = await rpc(refusing, t1.access_token, 'tools/call', { name: 'list_notes', arguments: {} });
      expect(r1.body?.result?.structuredContent?.error?.code).toBe('act-as-failed');
      const t2 = await tokensFor(swapped, 'hank');
      const r2 = await rpc(swapped, t2.access_token, 'tools/call', { name: 'list_notes', arguments: {} });
      expect(r2.body?.result?.structuredContent?.error?.code).toBe('act-as-subject-mismatch');
      expect([...refusing.executions, ...swapped.executions]).toHaveLength(0);
    } finally {
      await refusing.close();
      await swapped.close();
    }
  });
});

describe('long tool calls', () => {
  it('sends progress notifications while a call runs, when the client asked with a progressToken', async () => {
    const slow = await startDoorHost(store, {
      progressIntervalMs: 40,
      tools: [
        {
          name: 'slow_report',
          description: 'Takes a while',
          input: { type: 'object', properties: {} },
          risk: 'read',
          execute: () => new Promise((resolve) => setTimeout(() => resolve({ done: true }), 200)),
        },
      ],
    });
    try {
      const tokens = await tokensFor(slow, 'patient');
      const answer = await rpc(slow, tokens.access_token, 'tools/call', {
        name: 'slow_report',
        arguments: {},
        _meta: { progressToken: 'p-1' },
      });
      const progress = answer.raw
        .split('\n')
        .filter((line) => line.startsWith('data: ') && line.includes('notifications/progress'))
        .map((line) => JSON.parse(line.slice(6)).params);
      expect(progress.length).toBeGreaterThanOrEqual(2);
      expect(progress[0]).toEqual({ progressToken: 'p-1', progress: 1 });
      expect(answer.body?.result?.structuredContent).toEqual({ done: true });
    } finally {
      await slow.close();
    }
  });
});

describe('approvals and audit', () => {
  it('runs a tool that needs approval only under a grant the user remembered in the app', async () => {
    const tokens = await tokensFor(host, 'approver');
    const parked = await call(tokens.access_token, 'archive_note', { id: 'n1' });
    expect(parked.body?.result?.structuredContent?.error?.code).toBe('approval-required');
    expect(host.executions.some((e) => e.tool === 'archive_note')).toBe(false);

    const grant = await new ApprovalGrants(store.db).create(store.db, {
      owner: 'approver',
      tool: 'archive_note',
      scope: 'tool',
      toolInput: { id: 'n1' },
      ttlSeconds: 3600,
    });
    const ran = await call(tokens.access_token, 'archive_note', { id: 'n1' });
    expect(ran.body?.result?.structuredContent).toEqual({ archived: 'n1', grant: grant.id });
  });

  it("records each call in the user's activity, attributed to the client", async () => {
    const tokens = await tokensFor(host, 'audited');
    await call(tokens.access_token, 'list_notes');
    await call(tokens.access_token, 'failing_tool');
    // Activity is written in batches, a few tens of milliseconds after the calls.
    await vi.waitFor(async () => {
      const events = await listAudit(store.db, 'audited', { limit: 10 });
      expect(events.map((e) => [e.kind, e.data])).toEqual([
        ['tool.called', { tool: 'failing_tool', via: 'door', clientId: tokens.client.clientId, ok: false }],
        ['tool.called', { tool: 'list_notes', via: 'door', clientId: tokens.client.clientId, ok: true }],
      ]);
    });
  });
});

describe('curated menu', () => {
  it('lists only surfaces.mcp, uses override titles, and warns once for missing or disabled entries', async () => {
    const curated = await startDoorHost(store, {
      overrides: {
        surfaces: { mcp: ['create_note', 'missing_tool', 'disabled_tool', 'internal_tool'] },
        tools: { create_note: { title: 'Write a note' } },
      },
    });
    try {
      const tokens = await tokensFor(curated, 'ivy');
      const listed = await rpc(curated, tokens.access_token, 'tools/list');
      expect(listed.body?.result?.tools).toEqual([
        expect.objectContaining({
          name: 'create_note',
          title: 'Write a note',
          annotations: { title: 'Write a note', readOnlyHint: false, destructiveHint: false },
        }),
      ]);
      await rpc(curated, tokens.access_token, 'tools/list');
      expect(curated.warnings.map((w) => w.fields)).toEqual([
        { tool: 'missing_tool', reason: 'no such tool' },
        { tool: 'disabled_tool', reason: 'disabled' },
      ]);
      const offMenu = await rpc(curated, tokens.access_token, 'tools/call', {
        name: 'list_notes',
        arguments: {},
      });
      expect(offMenu.body?.error?.message).toMatch(/Tool list_notes not found$/);
    } finally {
      await curated.close();
    }
  });
});

describe('caches', () => {
  it('honours a revocation or a withdrawn consent made on this instance at once, even with caching on', async () => {
    const cached = await startDoorHost(store, { authCacheTtlMs: 60_000 });
    try {
      const first = await tokensFor(cached, 'cached-user');
      expect(
        (await rpc(cached, first.access_token, 'tools/call', { name: 'list_notes', arguments: {} })).status,
      ).toBe(200);
      await cached.door.withdrawConsent('cached-user', first.client.clientId);
      const refused = await rpc(cached, first.access_token, 'tools/call', {
        name: 'list_notes',
        arguments: {},
      });
      expect(refused.status).toBe(401);

      const second = await tokensFor(cached, 'cached-user');
      expect((await rpc(cached, second.access_token, 'tools/list')).status).toBe(200);
      const revoked = await fetch(`${cached.url}/api/service/mcp/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: second.access_token, client_id: second.client.clientId }),
      });
      expect(revoked.status).toBe(200);
      expect((await rpc(cached, second.access_token, 'tools/list')).status).toBe(401);
    } finally {
      await cached.close();
    }
  });
});

/** The door as createService composes it (no createDoor), served over loopback. */
async function startServiceHost() {
  let handler: (request: Request) => Promise<Response> = async () => new Response(null, { status: 503 });
  const server = serve({ fetch: (request) => handler(request), port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const users = new Map<string, { subject: string }>();
  const service = await testService(store, {
    mcp: { productName: 'Notes' },
    env: { SERVICE_BASE_URL: url },
    oauth: {
      session: (request: Request) => {
        const subject = new RegExp(`${USER_COOKIE}=([^;]+)`).exec(request.headers.get('cookie') ?? '')?.[1];
        return subject ? { subject: decodeURIComponent(subject) } : new Response(null, { status: 401 });
      },
      principal: (subject: string) => users.get(subject) ?? null,
    },
    actAs: async () => ({ headers: {} }),
    tools: [{ name: 'lookup', description: 'Looks up', input: z.object({}), risk: 'read', execute: () => 1 }],
  });
  handler = (request) => service.fetch(request);
  const host = { url, users } as unknown as DoorHost;
  const lookup = (token: string) => rpc(host, token, 'tools/call', { name: 'lookup', arguments: {} });
  /** A wire request as `user` (the test services' header principal). */
  const wire = (user: string, path: string, init: RequestInit = {}) =>
    fetch(`${url}/api/service${path}`, {
      ...init,
      headers: { 'x-test-user': user, 'content-type': 'application/json', ...init.headers },
    });
  return {
    service,
    host,
    lookup,
    wire,
    close: async () => {
      await service.close();
      server.close();
    },
  };
}

describe("the host's service.door", () => {
  it('lists the clients a user approved and withdraws one: its live token is refused at once', async () => {
    const { service, host, lookup, close } = await startServiceHost();
    try {
      const kept = await tokensFor(host, 'withdrawer');
      const dropped = await tokensFor(host, 'withdrawer');
      expect((await lookup(dropped.access_token)).status).toBe(200);

      const consents = await service.door!.consentsOf('withdrawer');
      expect(consents.map((c) => c.clientId).sort()).toEqual(
        [kept.client.clientId, dropped.client.clientId].sort(),
      );
      expect(consents[0]).toMatchObject({ clientName: 'Test client', scopes: ['read', 'write'] });

      expect(await service.door!.withdrawConsent('withdrawer', dropped.client.clientId)).toBe(true);
      // Its token was verified and cached a moment ago, yet is refused on the very next request.
      expect((await lookup(dropped.access_token)).status).toBe(401);
      expect((await tokenRequest(host, refreshOf(dropped))).status).toBe(400);
      expect((await lookup(kept.access_token)).status).toBe(200);
      expect((await service.door!.consentsOf('withdrawer')).map((c) => c.clientId)).toEqual([
        kept.client.clientId,
      ]);
      expect(await service.door!.withdrawConsent('withdrawer', dropped.client.clientId)).toBe(false);

      await service.door!.revokeUser('withdrawer');
      expect((await lookup(kept.access_token)).status).toBe(401);
    } finally {
      await close();
    }
  });

  it('voids the codes not yet exchanged too: a disconnected client or a revoked user gets no tokens from one', async () => {
    const { service, host, close } = await startServiceHost();
    const redeem = async (flow: Awaited<ReturnType<typeof authorizeCode>>) => {
      const response = await codeExchange(host, flow);
      return { status: response.status, body: await response.json() };
    };
    try {
      // A code approved a moment before the user disconnects its client.
      const disconnected = await authorizeCode(host, 'code-holder');
      const otherClient = await authorizeCode(host, 'code-holder');
      const otherUser = await authorizeCode(host, 'bystander', disconnected.client);
      expect(await service.door!.withdrawConsent('code-holder', disconnected.client.clientId)).toBe(true);
      expect(await redeem(disconnected)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      // The user's other client and another user of the same client keep theirs.
      expect((await redeem(otherClient)).status).toBe(200);
      expect((await redeem(otherUser)).status).toBe(200);

      // A code approved a moment before the host revokes the user everywhere.
      const pending = await authorizeCode(host, 'code-holder', otherClient.client);
      await service.door!.revokeUser('code-holder');
      expect(await redeem(pending)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    } finally {
      await close();
    }
  });

  it('lets the signed-in user list their MCP clients and disconnect one on the wire', async () => {
    const { host, lookup, wire, close } = await startServiceHost();
    try {
      const kept = await tokensFor(host, 'disconnecter');
      const dropped = await tokensFor(host, 'disconnecter');
      const listed = await wire('disconnecter', '/mcp-clients');
      expect(listed.status).toBe(200);
      const { clients } = await listed.json();
      expect(clients).toHaveLength(2);
      expect(clients[0]).toEqual({
        id: expect.stringMatching(/^mcp_client_/),
        name: 'Test client',
        scopes: ['read', 'write'],
        approvedAt: expect.any(String),
      });
      // Another user sees none of them and cannot disconnect them.
      expect(await (await wire('stranger', '/mcp-clients')).json()).toEqual({ clients: [] });
      const foreign = await wire('stranger', `/mcp-clients/${dropped.client.clientId}`, { method: 'DELETE' });
      expect(foreign.status).toBe(404);
      expect((await foreign.json()).error.code).toBe('not_found');
      expect((await lookup(dropped.access_token)).status).toBe(200);
      expect((await wire('disconnecter', '/mcp-clients')).status).toBe(200);
      const anonymous = await fetch(`${host.url}/api/service/mcp-clients`);
      expect(anonymous.status).toBe(403);
      expect((await anonymous.json()).error.code).toBe('principal_required');

      const gone = await wire('disconnecter', `/mcp-clients/${dropped.client.clientId}`, {
        method: 'DELETE',
        body: '{}',
      });
      expect(gone.status).toBe(200);
      expect(await gone.json()).toEqual({ disconnected: true, id: dropped.client.clientId });
      expect((await lookup(dropped.access_token)).status).toBe(401);
      expect((await lookup(kept.access_token)).status).toBe(200);
      expect(
        (await (await wire('disconnecter', '/mcp-clients')).json()).clients.map((c: { id: string }) => c.id),
      ).toEqual([kept.client.clientId]);
      expect(
        (await wire('disconnecter', `/mcp-clients/${dropped.client.clientId}`, { method: 'DELETE' })).status,
      ).toBe(404);
    } finally {
      await close();
    }
  });

  it('answers racing disconnects of one client with one 200 and records one disconnection', async () => {
    const { host, wire, close } = await startServiceHost();
    const consentsOf = ClientStore.prototype.consentsOf;
    try {
      const tokens = await tokensFor(host, 'racer');
      const clientId = tokens.client.clientId;
      // Each disconnect finds the consent before any withdraws it, as two tabs clicking at once.
      let looked = 0;
      let allLooked: () => void = () => {};
      const lookedUp = new Promise<void>((resolve) => {
        allLooked = resolve;
      });
      vi.spyOn(ClientStore.prototype, 'consentsOf').mockImplementation(async function (
        this: ClientStore,
        subject,
      ) {
        const consents = await consentsOf.call(this, subject);
        if (++looked === 3) allLooked();
        await lookedUp;
        return consents;
      });
      const answers = await Promise.all(
        [1, 2, 3].map(() => wire('racer', `/mcp-clients/${clientId}`, { method: 'DELETE' })),
      );
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 404, 404]);
      await vi.waitFor(async () => {
        const events = await listAudit(store.db, 'racer', { limit: 10 });
        expect(events.map((event) => event.kind)).toContain('mcp_client.disconnected');
      });
      const events = await listAudit(store.db, 'racer', { limit: 10 });
      expect(events.filter((event) => event.kind === 'mcp_client.disconnected')).toHaveLength(1);
    } finally {
      vi.restoreAllMocks();
      await close();
    }
  });

  it('is null without the door', async () => {
    const service = await testService(store);
    try {
      expect(service.door).toBeNull();
    } finally {
      await service.close();
    }
  });
});

function refreshOf(tokens: TokenSet & { client: { clientId: string } }): Record<string, string> {
  return {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: tokens.client.clientId,
  };
}
