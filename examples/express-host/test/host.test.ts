/**
 * The Express example host, started for real on loopback and driven as a script would: sign in,
 * run turns (parsed with the AI SDK's own stream reader), approve a parked cancellation.
 */

import type { AddressInfo } from 'node:net';
import { silentLogger } from '@service/core/http';
import type { Store } from '@service/core/store';
import {
  parseJsonEventStream,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
  uiMessageChunkSchema,
} from 'ai';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../../packages/core/test/support/stores.js';
import { type RunningHost, startExpressHost } from '../src/host.js';
import { jsonErrorHandler } from '../src/json-errors.js';

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

  it('answers a body that is not a JSON object with 400 invalid_json, and one over 16 KiB with 413 payload_too_large, never a stack', async () => {
    const post = (body: string) =>
      fetch(`${host.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    for (const [body, status, code] of [
      ['{', 400, 'invalid_json'],
      ['{"email":', 400, 'invalid_json'],
      [JSON.stringify({ email: 'x'.repeat(17 * 1024) }), 413, 'payload_too_large'],
    ] as const) {
      const answer = await post(body);
      expect(answer.status, code).toBe(status);
      expect(answer.headers.get('content-type'), code).toMatch(/^application\/json/);
      const text = await answer.text();
      expect(JSON.parse(text), code).toEqual({ code, message: expect.any(String) });
      if (status === 413)
        expect(JSON.parse(text).message).toBe('The request body is larger than 16384 bytes.');
      else expect(JSON.parse(text).message).toBe('The request body is not valid JSON.');
      expect(text, code).not.toMatch(/ at |\/src\/|node_modules/);
    }
    // JSON that is not an object is said to be so, not to be invalid.
    for (const body of ['null', '"demo@example.com"', '42']) {
      const answer = await post(body);
      expect(answer.status, body).toBe(400);
      expect(await answer.json(), body).toEqual({
        code: 'invalid_json',
        message: 'The request body must be a JSON object.',
      });
    }
    // The same on every host route, since the JSON parser runs before any of them.
    const logout = await fetch(`${host.url}/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    expect(logout.status).toBe(400);
    expect((await logout.json()).code).toBe('invalid_json');
  });

  it('answers any other failure of a host route with a generic 500 in JSON, its cause logged', async () => {
    const logged: Array<Record<string, unknown> | undefined> = [];
    const app = express();
    app.get('/boom', () => {
      throw new Error('secret detail');
    });
    app.use(jsonErrorHandler({ ...silentLogger, error: (_message, fields) => logged.push(fields) }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const answer = await fetch(`http://127.0.0.1:${port}/boom`);
      expect(answer.status).toBe(500);
      expect(await answer.json()).toEqual({ code: 'internal_error', message: 'Something went wrong.' });
      expect(logged[0]?.error_message).toBe('secret detail');
    } finally {
      server.close();
    }
  });

  it('refuses an email holding a NUL or another control character with 400', async () => {
    for (const email of [
      'a\u0000b@example.com',
      'ada@exa\u0007mple.com',
      'ada\u007f@example.com',
      'ada@example.com\u0085',
      // 255 characters: with `user:` a subject past the wire's 256.
      `${'a'.repeat(64)}@${'b'.repeat(190)}`,
    ]) {
      const answer = await fetch(`${host.url}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email }),
      });
      expect(answer.status, JSON.stringify(email)).toBe(400);
      expect(await answer.json()).toEqual({ message: 'email must be an email address' });
    }
    expect(host.sessionFor('a\u0000b@example.com')).toBeNull();
    expect(host.sessionFor('ada@example.com')).not.toBeNull();
    // 251 characters: the longest address whose subject the wire takes.
    const longest = `${'a'.repeat(64)}@${'b'.repeat(186)}`;
    const signedIn = await fetch(`${host.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: longest }),
    });
    expect(signedIn.status).toBe(200);
    const { token } = (await signedIn.json()) as { token: string };
    expect(
      (await fetch(`${host.url}/api/service/threads`, { headers: { authorization: `Bearer ${token}` } }))
        .status,
    ).toBe(200);
  });

  it('leaves the host’s own routes and 404s to Express', async () => {
    expect((await fetch(`${host.url}/.well-known/openid-configuration`)).status).toBe(404);
    expect((await fetch(`${host.url}/`, { redirect: 'manual' })).headers.get('location')).toBe(
      '/login?return_to=%2F',
    );
  });
});
