/**
 * The wire with the MCP door composed in: door paths are answered first, before the base-path
 * check, principal resolution and the JSON gate; `wellKnown` serves the origin-root discovery
 * documents and falls through (null) for anything else.
 *
 * @see docs/wire.md "MCP door"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { listAudit } from '../../src/agent/audit.js';
import { mintServiceKey } from '../../src/door/index.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { headerPrincipal, ORIGIN, testService } from './support/wire.js';

let store: TestStore;
let withDoor: Service;
let withoutDoor: Service;
let principalCalls = 0;

beforeAll(async () => {
  store = await openTestStore();
  withDoor = await testService(store, {
    development: true, // status answers without a principal (this one never signs anyone in)
    mcp: { productName: 'Acme' },
    oauth: { session: () => ({ subject: 'ada' }), principal: (subject: string) => ({ subject }) },
    env: { SERVICE_BASE_URL: ORIGIN },
    principal: () => {
      principalCalls++;
      return null;
    },
    tools: [{ name: 'lookup', description: 'Looks up', input: z.object({}), risk: 'read', execute: () => 1 }],
  });
  withoutDoor = await testService(store);
});
afterAll(async () => {
  await withDoor?.close();
  await withoutDoor?.close();
  await store?.dispose();
});

describe('door composition', () => {
  it('answers the MCP transport before principal resolution and the JSON gate', async () => {
    const response = await withDoor.fetch(
      new Request(`${ORIGIN}/api/service/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', accept: 'application/json, text/event-stream' },
        body: '{}',
      }),
    );
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(principalCalls).toBe(0);
  });

  it('gives every door answer an X-Request-Id, the caller’s own when it is a safe one', async () => {
    const answers = [
      await withDoor.fetch(new Request(`${ORIGIN}/api/service/mcp/token`, { method: 'POST', body: 'x=1' })),
      await withDoor.fetch(
        new Request(`${ORIGIN}/api/service/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': 'trace-door-1' },
          body: '{}',
        }),
      ),
      (await withDoor.wellKnown(
        new Request(`${ORIGIN}/.well-known/oauth-authorization-server/api/service/mcp`),
      ))!,
    ];
    for (const answer of answers) expect(answer.headers.get('x-request-id')).toMatch(/^[\w-]{8,}$/);
    expect(answers[1]!.headers.get('x-request-id')).toBe('trace-door-1');
  });

  it('hands the door the connection, so registrations are limited per client address', async () => {
    const register = (remoteAddress: string) =>
      withDoor.fetch(
        new Request(`${ORIGIN}/api/service/mcp/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9999/callback'], client_name: 'x' }),
        }),
        { remoteAddress },
      );
    // Fixed one-minute windows: start where the window has room for the whole burst.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) statuses.push((await register('198.51.100.7')).status);
    expect(statuses.slice(0, 60).every((status) => status === 201)).toBe(true);
    expect(statuses[60]).toBe(429);
    expect((await register('198.51.100.8')).status).toBe(201);
  });

  it('serves the origin-root discovery documents through wellKnown, and null for the host’s own', async () => {
    const metadata = await withDoor.wellKnown(
      new Request(`${ORIGIN}/.well-known/oauth-protected-resource/api/service/mcp`),
    );
    expect(metadata?.status).toBe(200);
    expect(await metadata?.json()).toMatchObject({ resource: `${ORIGIN}/api/service/mcp` });
    expect(await withDoor.wellKnown(new Request(`${ORIGIN}/.well-known/security.txt`))).toBeNull();
    expect(
      await withoutDoor.wellKnown(
        new Request(`${ORIGIN}/.well-known/oauth-protected-resource/api/service/mcp`),
      ),
    ).toBeNull();
  });

  it('reports the door in status, and leaves other wire routes to the wire', async () => {
    const status = await (await withDoor.fetch(new Request(`${ORIGIN}/api/service/status`))).json();
    expect(status.blocks.mcp).toBe('local');
    const threads = await withDoor.fetch(new Request(`${ORIGIN}/api/service/threads`));
    expect(threads.status).toBe(403);
    expect(principalCalls).toBe(1);
  });

  it('reports the broker in status only when the door takes its tokens, not when serviceAuth keeps it local', async () => {
    const env = {
      SERVICE_BASE_URL: ORIGIN,
      SERVICE_MCP_BROKER_URL: 'https://broker.example',
      SERVICE_MCP_FEDERATION_SECRET: 's'.repeat(32),
    };
    const oauth = { session: () => ({ subject: 'ada' }), principal: (subject: string) => ({ subject }) };
    const statusOf = async (mcp: Record<string, unknown>) => {
      const service = await testService(store, { development: true, mcp, oauth, env });
      try {
        return (await (await service.fetch(new Request(`${ORIGIN}/api/service/status`))).json()).blocks.mcp;
      } finally {
        await service.close();
      }
    };
    expect(await statusOf({ productName: 'Acme' })).toBe('broker');
    expect(await statusOf({ productName: 'Acme', serviceAuth: { keys: [mintServiceKey()] } })).toBe('local');
  });
});

describe('the door’s activity with the wire', () => {
  /** A wire with the door and a service key; `callTool(subject)` calls `lookup` through the door as them. */
  async function doorWithServiceKey() {
    const serviceKey = mintServiceKey();
    const service = await testService(store, {
      mcp: { productName: 'Acme', serviceAuth: { keys: [serviceKey], clientId: 'acme-backend' } },
      oauth: { session: () => ({ subject: 'ada' }), principal: (subject: string) => ({ subject }) },
      actAs: async () => ({ headers: {} }),
      env: { SERVICE_BASE_URL: ORIGIN },
      principal: headerPrincipal,
      tools: [
        { name: 'lookup', description: 'Looks up', input: z.object({}), risk: 'read', execute: () => 1 },
      ],
    });
    const post = (path: string, init: RequestInit) =>
      service.fetch(new Request(`${ORIGIN}/api/service/mcp${path}`, { method: 'POST', ...init }));
    const callTool = async (subject: string) => {
      const token = await post('/token', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
          client_id: 'acme-backend',
          client_secret: serviceKey,
          subject_token: subject,
          subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        }),
      });
      const { access_token } = (await token.json()) as { access_token: string };
      const call = await post('', {
        headers: {
          authorization: `Bearer ${access_token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'lookup', arguments: {} },
        }),
      });
      expect(call.status).toBe(200);
      await call.text();
    };
    return { service, callTool };
  }

  it('shows a door tool call in the wire’s /activity at once (one queue)', async () => {
    const { service, callTool } = await doorWithServiceKey();
    try {
      await callTool('active-user');
      const activity = await service.fetch(
        new Request(`${ORIGIN}/api/service/activity`, { headers: { 'x-test-user': 'active-user' } }),
      );
      expect(activity.status).toBe(200);
      expect(JSON.stringify(await activity.json())).toContain('tool.called');
    } finally {
      await service.close();
    }
  });

  it('writes the door’s queued activity before the store closes', async () => {
    const { service, callTool } = await doorWithServiceKey();
    await callTool('closing-user');
    // Activity is queued for up to 25 ms; close at once, well inside that window.
    await service.close();
    const events = await listAudit(store.db, 'closing-user', { limit: 10 });
    expect(events.map((event) => event.kind)).toContain('tool.called');
  });
});
