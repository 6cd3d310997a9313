/**
 * The Express example host, started for real on loopback and driven as a script would: sign in,
 * run turns (parsed with the AI SDK's own stream reader), approve a parked cancellation.
 */

import { silentLogger } from '@service/core/http';
import type { Store } from '@service/core/store';
import {
  parseJsonEventStream,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
  uiMessageChunkSchema,
} from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../../packages/core/test/support/stores.js';
import { type RunningHost, startExpressHost } from '../src/host.js';

let store: Store;
let host: RunningHost;
let production: RunningHost;

beforeAll(async () => {
  store = await openMemoryStore();
  host = await startExpressHost({ store, development: true, logger: silentLogger, env: {} });
  production = await startExpressHost({ store, development: false, logger: silentLogger, env: {} });
});
afterAll(async () => {
  await host?.close();
  await production?.close();
  await store?.close();
});

async function signIn(base: string, email: string): Promise<string> {
  const response = await fetch(`${base}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { token: string }).token;
}

async function chunksOf(response: Response): Promise<UIMessageChunk[]> {
  const reader = parseJsonEventStream({ stream: response.body!, schema: uiMessageChunkSchema }).getReader();
  const chunks: UIMessageChunk[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    if (!value.success) throw value.error;
    chunks.push(value.value);
  }
}

async function messageOf(chunks: UIMessageChunk[]): Promise<UIMessage | undefined> {
  let message: UIMessage | undefined;
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  for await (const m of readUIMessageStream({ stream })) message = m;
  return message;
}

describe('express-host example', () => {
  it('signs a script in and streams a turn that calls a host tool', async () => {
    const token = await signIn(host.url, 'ada@example.com');
    const response = await fetch(`${host.url}/api/service/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'What are my orders?' }),
    });
    expect(response.status).toBe(200);
    const message = await messageOf(await chunksOf(response));
    expect(message?.parts.find((p) => p.type === 'tool-list_orders')).toMatchObject({
      state: 'output-available',
    });
    expect(JSON.stringify(message?.parts)).toContain('A-1001');
  });

  it('parks a cancellation for approval and completes it once approved over the API', async () => {
    const token = await signIn(host.url, 'bob@example.com');
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const turn = await fetch(`${host.url}/api/service/chat`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ id: 'bob-cancel', message: 'Please cancel order A-1002' }),
    });
    // The stream ends where the call waits for a decision: its last chunk says where to resume.
    const paused = await chunksOf(turn);
    expect(paused.at(-1)).toMatchObject({
      type: 'message-metadata',
      messageMetadata: { status: 'awaiting_approval', resumeAfter: paused.length },
    });
    const pending: Array<{ id: string; request: { tool: string; input: unknown } }> = (
      await (await fetch(`${host.url}/api/service/approvals?status=pending`, { headers: auth })).json()
    ).approvals;
    expect(pending[0]?.request).toEqual({
      tool: 'cancel_order',
      toolCallId: expect.any(String),
      input: { orderId: 'A-1002' },
    });
    const decided = await fetch(`${host.url}/api/service/approvals/${pending[0]!.id}/decide`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(decided.status).toBe(200);
    const rest = await fetch(`${host.url}/api/service/threads/bob-cancel/stream`, {
      headers: { ...auth, 'last-event-id': String(paused.length) },
    });
    const message = await messageOf([...paused, ...(await chunksOf(rest))]);
    expect(message?.parts.find((p) => p.type === 'tool-cancel_order')).toMatchObject({
      state: 'output-available',
      output: { id: 'A-1002', status: 'cancelled' },
    });
  });

  it('works with the sign-in cookie too, and still refuses a form post (CSRF gate)', async () => {
    const token = await signIn(host.url, 'carol@example.com');
    const cookie = `host_session=${token}`;
    const threads = await fetch(`${host.url}/api/service/threads`, { headers: { cookie } });
    expect(threads.status).toBe(200);
    const form = await fetch(`${host.url}/api/service/chat`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'message=hi',
    });
    expect(form.status).toBe(415);
    expect((await fetch(`${host.url}/api/service/threads`)).status).toBe(403);
    expect(
      (await fetch(`${host.url}/api/service/threads`, { headers: { cookie: 'host_session=forged.x' } }))
        .status,
    ).toBe(403);
  });

  it('answers the development routes only in development', async () => {
    const probe = (base: string) =>
      fetch(`${base}/api/service/doctor/act-as`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
    expect((await probe(host.url)).status).toBe(200);
    expect((await probe(production.url)).status).toBe(404);
    expect((await fetch(`${production.url}/api/service/doctor/base-url`)).status).toBe(200);
  });

  it('leaves the host’s own routes and 404s to Express', async () => {
    expect((await fetch(`${host.url}/.well-known/openid-configuration`)).status).toBe(404);
    expect((await fetch(`${host.url}/`, { redirect: 'manual' })).headers.get('location')).toBe(
      '/login?return_to=%2F',
    );
  });
});
