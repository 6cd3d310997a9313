/**
 * The demo host (examples/express-host, its offline demo model) driven by the AI SDK's chat core
 * exactly as `useChat` runs it: `AbstractChat` with `DefaultChatTransport` pointed at the host,
 * the sign-in cookie, and `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses`.
 * Send and stream, approve, deny and "always allow" a parked call, stop, resume after a dropped
 * connection, regenerate, and a long history.
 *
 * @see docs/wire.md "Turns", "Resume", "Runs", "Approvals and grants"
 */
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningHost, startExpressHost } from '../../../../examples/express-host/src/host.js';
import { silentLogger } from '../../src/http/logger.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { TestChat } from './support/chat.js';
import { eventually, textOf } from './support/wire.js';

/** The longest a stop may take, from its answer to the run recorded `cancelled`. */
const STOP_WITHIN_MS = 250;

let store: TestStore;
let host: RunningHost;
let signedIn = 0;

beforeAll(async () => {
  store = await openTestStore();
  host = await startExpressHost({ store, development: false, logger: silentLogger, env: {} });
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

/** A fresh user signed in to the demo host, and the chat core and API calls as that user. */
async function signIn() {
  const response = await fetch(`${host.url}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `chat-core-${++signedIn}@example.com` }),
  });
  const { token } = (await response.json()) as { token: string };
  const cookie = `host_session=${token}`;
  const api = (path: string, body?: unknown) =>
    fetch(`${host.url}/api/service${path}`, {
      ...(body === undefined
        ? { headers: { cookie } }
        : {
            method: 'POST',
            headers: { cookie, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          }),
    });
  const newChat = (id: string, fetcher?: typeof fetch) =>
    new TestChat({
      id,
      transport: new DefaultChatTransport({
        api: `${host.url}/api/service/chat`,
        headers: { cookie },
        ...(fetcher ? { fetch: fetcher } : {}),
      }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
  return { api, newChat, chat: newChat(`chat-core-${signedIn}`) };
}

type ToolPart = { type: string; state: string; approval?: { id: string }; output?: unknown };

function toolPart(message: UIMessage | undefined, tool: string): ToolPart | undefined {
  return message?.parts.find((p) => p.type === `tool-${tool}`) as ToolPart | undefined;
}

/** Waits until the chat is idle again after an automatic resend. */
function settled(chat: TestChat, done: () => boolean) {
  return eventually(async () => (chat.status === 'ready' && done() ? true : undefined));
}

/** A chat whose turn paused on `cancel order <id>`: the approval waits for the user. */
async function parkedCancel(orderId = 'A-1001') {
  const user = await signIn();
  const { chat } = user;
  await chat.sendMessage({ text: `cancel order ${orderId}` });
  expect(chat.status).toBe('ready');
  const part = toolPart(chat.messages[1], 'cancel_order')!;
  expect(part.state).toBe('approval-requested');
  return { ...user, chat, approvalId: part.approval!.id };
}

describe('the AI SDK chat core on the demo host', () => {
  it('sends a message and streams the answer, with the tool it called', async () => {
    const { chat, api } = await signIn();
    await chat.sendMessage({ text: 'What are my orders?' });
    expect(chat.status).toBe('ready');
    expect(chat.error).toBeUndefined();
    const answer = chat.messages[1]!;
    expect(toolPart(answer, 'list_orders')).toMatchObject({ state: 'output-available' });
    expect(textOf(answer)).toContain('A-1001');
    expect(answer.metadata).toMatchObject({ status: 'completed' });
    const thread = (await (await api(`/threads/${chat.id}`)).json()).thread;
    expect(thread.messages.map((m: UIMessage) => m.id)).toEqual(chat.messages.map((m) => m.id));
  });

  it('approves with addToolApprovalResponse: the chat resends, the tool runs, both paths agree', async () => {
    const { chat, api, approvalId } = await parkedCancel();
    await chat.addToolApprovalResponse({ id: approvalId, approved: true });
    await settled(chat, () => textOf(chat.messages[1]).length > 0);
    expect(chat.error).toBeUndefined();
    expect(chat.messages).toHaveLength(2);
    expect(toolPart(chat.messages[1], 'cancel_order')).toMatchObject({
      state: 'output-available',
      output: { id: 'A-1001', status: 'cancelled' },
    });
    expect(textOf(chat.messages[1])).toContain('Done.');
    expect((await (await api(`/approvals/${approvalId}`)).json()).approval.status).toBe('executed');
    const thread = (await (await api(`/threads/${chat.id}`)).json()).thread;
    expect(thread.messages[1].id).toBe(chat.messages[1]!.id);
    expect(toolPart(thread.messages[1], 'cancel_order')).toMatchObject({ state: 'output-available' });
  });

  it('denies the same way: the call shows output-denied and the approval is declined', async () => {
    const { chat, api, approvalId } = await parkedCancel();
    await chat.addToolApprovalResponse({ id: approvalId, approved: false, reason: 'Changed my mind' });
    await settled(chat, () => textOf(chat.messages[1]).length > 0);
    expect(toolPart(chat.messages[1], 'cancel_order')?.state).toBe('output-denied');
    expect((await (await api(`/approvals/${approvalId}`)).json()).approval.status).toBe('declined');
    await chat.sendMessage({ text: 'my orders?' });
    const listed = toolPart(chat.messages[3], 'list_orders')!.output as {
      orders: Array<{ id: string; status: string }>;
    };
    expect(listed.orders.find((o) => o.id === 'A-1001')?.status).toBe('open');
  });

  it('"Always allow": the decide route with remember, then addToolApprovalResponse; later calls run unasked', async () => {
    const { chat, api, approvalId } = await parkedCancel();
    const decided = await api(`/approvals/${approvalId}/decide`, { decision: 'approve', remember: true });
    expect(decided.status).toBe(200);
    expect((await decided.json()).grants).toEqual([expect.objectContaining({ tool: 'cancel_order' })]);
    await chat.addToolApprovalResponse({ id: approvalId, approved: true });
    await settled(chat, () => textOf(chat.messages[1]).length > 0);
    expect(chat.error).toBeUndefined();
    expect(toolPart(chat.messages[1], 'cancel_order')).toMatchObject({
      state: 'output-available',
      output: { id: 'A-1001', status: 'cancelled' },
    });
    expect((await (await api(`/approvals/${approvalId}`)).json()).approval.status).toBe('executed');

    await chat.sendMessage({ text: 'cancel order A-1002' });
    expect(toolPart(chat.messages[3], 'cancel_order')).toMatchObject({
      state: 'output-available',
      output: { id: 'A-1002', status: 'cancelled' },
    });
  });

  it(`stops: the thread's stop, then chat.stop(); the run is cancelled within ${STOP_WITHIN_MS} ms`, async () => {
    const { chat, api } = await signIn();
    const sending = chat.sendMessage({ text: 'tell me a story' });
    await eventually(async () => (textOf(chat.messages[1]).split(' ').length > 10 ? true : undefined));
    const stop = await api(`/threads/${chat.id}/stop`, {});
    const stoppedAt = Date.now();
    expect(stop.status).toBe(202);
    const { run } = await stop.json();
    await chat.stop();
    await sending;
    const cancelled = await eventually(async () => {
      const current = (await (await api(`/runs/${run.id}`)).json()).run;
      return current.status === 'cancelled' ? Date.now() : undefined;
    }, 2000);
    expect(cancelled - stoppedAt).toBeLessThan(STOP_WITHIN_MS);
    expect(chat.status).toBe('ready');
    // What was said is kept, on the client and on the server (which may have a word or two more).
    const shown = textOf(chat.messages[1]);
    const stored = textOf((await (await api(`/threads/${chat.id}`)).json()).thread.messages[1]);
    expect(shown.length).toBeGreaterThan(0);
    expect(stored.startsWith(shown)).toBe(true);
    expect(stored.split(' ').length).toBeLessThan(100);
    // Nothing in flight any more: the thread takes a new message.
    await chat.sendMessage({ text: 'What are my orders?' });
    expect(toolPart(chat.messages.at(-1), 'list_orders')?.state).toBe('output-available');
  });

  it('resumes after a dropped connection: the message completes, no text twice', async () => {
    let drop: (() => void) | null = null;
    /** A fetch whose turn request the test cuts off mid-stream, as a lost network would. */
    const droppable: typeof fetch = (input, init) => {
      const abort = new AbortController();
      if (init?.method === 'POST') drop = () => abort.abort();
      return fetch(input, {
        ...init,
        signal: AbortSignal.any([abort.signal, ...(init?.signal ? [init.signal] : [])]),
      });
    };
    const user = await signIn();
    const { api } = user;
    const chat = user.newChat(`dropped-${signedIn}`, droppable);
    const sending = chat.sendMessage({ text: 'a story please' });
    await eventually(async () => (textOf(chat.messages[1]).split(' ').length > 10 ? true : undefined));
    drop!();
    await sending;
    const before = textOf(chat.messages[1]);
    const { runId } = chat.messages[1]!.metadata as { runId: string };
    expect((await (await api(`/runs/${runId}`)).json()).run.status).toBe('running');

    await chat.resumeStream();
    expect(chat.messages).toHaveLength(2);
    const after = textOf(chat.messages[1]);
    expect(after.startsWith(before)).toBe(true);
    expect(after.split(' ')).toHaveLength(150);
    expect(after.match(/Chapter 1:/g)).toHaveLength(1);
    expect((await (await api(`/runs/${runId}`)).json()).run.status).toBe('completed');
    const stored = (await (await api(`/threads/${chat.id}`)).json()).thread.messages[1];
    expect(textOf(stored)).toBe(after);
  });

  it('regenerates the last answer: a new message replaces it, on the client and on the server', async () => {
    const { chat, api } = await signIn();
    await chat.sendMessage({ text: 'hello there' });
    const first = chat.messages[1]!.id;
    await chat.regenerate();
    expect(chat.error).toBeUndefined();
    expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(chat.messages[1]!.id).not.toBe(first);
    expect(textOf(chat.messages[1])).toContain('You said: hello there');
    const thread = (await (await api(`/threads/${chat.id}`)).json()).thread;
    expect(thread.messages.map((m: UIMessage) => m.id)).toEqual(chat.messages.map((m) => m.id));
  });

  it('sends a message after a 2 MB history: only the last message is read', async () => {
    const { chat, api } = await signIn();
    const filler = 'x'.repeat(10_000);
    chat.messages = Array.from({ length: 200 }, (_, i) => ({
      id: `old-${i}`,
      role: i % 2 === 0 ? 'user' : 'assistant',
      parts: [{ type: 'text', text: `${i} ${filler}` }],
    })) as UIMessage[];
    await chat.sendMessage({ text: 'What are my orders?' });
    expect(chat.error).toBeUndefined();
    expect(toolPart(chat.messages.at(-1), 'list_orders')?.state).toBe('output-available');
    const thread = (await (await api(`/threads/${chat.id}`)).json()).thread;
    expect(thread.messages).toHaveLength(2);
  });
});
