/**
 * The wire as useChat sees it: the AI SDK's own chat core (`AbstractChat`, which `useChat`
 * wraps) with its `DefaultChatTransport`, over real HTTP to an Express server. No line of the
 * client is ours.
 *
 * @see docs/wire.md "Turns", "Resume"
 */
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { TestChat } from './support/chat.js';
import { reactiveModel } from './support/models.js';
import { connect, type Transport } from './support/transports.js';
import { eventually, ORIGIN, testService, textOf } from './support/wire.js';

/** The chat core with the wire's transport, signed in as `user`. */
function chatAs(id: string, user: string): TestChat {
  return new TestChat({
    id,
    transport: new DefaultChatTransport({ api, headers: { 'x-test-user': user } }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
}

/** The thread as `GET /threads/:id` answers it. */
async function threadOf(id: string, user: string) {
  const response = await fetch(api.replace('/chat', `/threads/${id}`), { headers: { 'x-test-user': user } });
  return (await response.json()).thread;
}

/** Holds the archive tool until the test lets it finish. */
const archiving = (() => {
  let resolve!: () => void;
  const promise = new Promise<void>((open) => {
    resolve = open;
  });
  return { promise, resolve };
})();

/** Every prompt the model was given, as JSON. */
const prompts: string[] = [];
let store: TestStore;
let service: Service;
let transport: Transport;
let api: string;

beforeAll(async () => {
  store = await openTestStore();
  const model = reactiveModel((options) => {
    prompts.push(JSON.stringify(options.prompt));
    const last = options.prompt.at(-1);
    if (last?.role === 'tool') return { text: ['All ', 'done.'] };
    const said = JSON.stringify(last?.content ?? '');
    if (said.includes('archive'))
      return { toolCalls: [{ id: `a${Date.now()}`, name: 'archive_note', input: { id: 8 } }] };
    if (said.includes('delete'))
      return { toolCalls: [{ id: `d${Date.now()}`, name: 'delete_note', input: { id: 7 } }] };
    if (said.includes('slow'))
      return { text: Array.from({ length: 10 }, (_, i) => `s${i} `), chunkDelayMs: 40 };
    return { toolCalls: [{ id: `w${Date.now()}`, name: 'weather', input: { city: 'Oslo' } }] };
  });
  service = await testService(store, {
    model,
    tools: [
      {
        name: 'weather',
        description: 'Weather',
        input: z.object({ city: z.string() }),
        risk: 'read',
        execute: () => 'sunny',
      },
      {
        name: 'archive_note',
        description: 'Archives a note (slowly)',
        input: z.object({ id: z.number() }),
        risk: 'destructive',
        execute: async () => {
          await archiving.promise;
          return { archived: 8 };
        },
      },
      {
        name: 'delete_note',
        description: 'Deletes a note',
        input: z.object({ id: z.number() }),
        risk: 'destructive',
        execute: () => ({ deleted: 7 }),
      },
    ],
  });
  transport = await connect('express', service);
  api = `${transport.url ?? ORIGIN}/api/service/chat`;
});
afterAll(async () => {
  await transport?.close();
  await service?.close();
  await store?.dispose();
});

describe('useChat’s chat core against the wire', () => {
  it('sends messages, renders tool calls and text, and continues the same thread', async () => {
    const chat = chatAs('chat-core-1', 'ann');
    await chat.sendMessage({ text: 'Weather in Oslo?' });
    expect(chat.status).toBe('ready');
    expect(chat.error).toBeUndefined();
    const answer = chat.messages[1]!;
    expect(answer.role).toBe('assistant');
    expect(answer.parts.find((p) => p.type === 'tool-weather')).toMatchObject({
      state: 'output-available',
      output: 'sunny',
    });
    expect(textOf(answer)).toBe('All done.');

    await chat.sendMessage({ text: 'And tomorrow?' });
    expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    const thread = await (
      await fetch(`${api.replace('/chat', '/threads/chat-core-1')}`, { headers: { 'x-test-user': 'ann' } })
    ).json();
    expect(thread.thread.messages).toHaveLength(4);
    // Nothing in flight: resume finds nothing and changes nothing.
    await chat.resumeStream();
    expect(chat.messages).toHaveLength(4);
  });

  it('ends the response at a parked call (approval-requested), and completes it once approved over the API', async () => {
    const chat = chatAs('chat-core-2', 'ben');
    await chat.sendMessage({ text: 'please delete note 7' });
    // The stream ended at the pause: the client is ready, the call waits for the user.
    expect(chat.status).toBe('ready');
    const part = chat.messages[1]!.parts.find((p) => p.type === 'tool-delete_note') as {
      state: string;
      approval: { id: string };
    };
    expect(part.state).toBe('approval-requested');
    expect(chat.messages[1]!.metadata).toMatchObject({ status: 'awaiting_approval' });
    const decided = await fetch(api.replace('/chat', `/approvals/${part.approval.id}/decide`), {
      method: 'POST',
      headers: { 'x-test-user': 'ben', 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(decided.status).toBe(200);
    // The client answers too (already decided the same way: not an error) and reads on from the pause.
    await chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
    await eventually(async () => (chat.status === 'ready' && textOf(chat.messages[1]) ? true : undefined));
    expect(chat.messages).toHaveLength(2);
    expect(chat.messages[1]!.parts.find((p) => p.type === 'tool-delete_note')).toMatchObject({
      state: 'output-available',
      output: { deleted: 7 },
    });
    expect(textOf(chat.messages[1])).toBe('All done.');
  });

  it('takes addToolApprovalResponse in band: the chat resends by itself and the same message completes', async () => {
    const chat = chatAs('chat-core-4', 'dan');
    await chat.sendMessage({ text: 'delete note 7 now' });
    const part = chat.messages[1]!.parts.find((p) => p.type === 'tool-delete_note') as {
      approval: { id: string };
    };
    await chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
    await eventually(async () => (chat.status === 'ready' && textOf(chat.messages[1]) ? true : undefined));
    expect(chat.error).toBeUndefined();
    expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(chat.messages[1]!.parts.find((p) => p.type === 'tool-delete_note')).toMatchObject({
      state: 'output-available',
      output: { deleted: 7 },
    });
    expect(textOf(chat.messages[1])).toBe('All done.');
  });

  it('keeps the decision on the stored part, and gives the model a denial’s reason, then and on later turns', async () => {
    const chat = chatAs('chat-core-deny', 'hal');
    await chat.sendMessage({ text: 'delete note 7 please' });
    const asked = chat.messages[1]!.parts.find((p) => p.type === 'tool-delete_note') as {
      approval: { id: string };
    };
    const id = asked.approval.id;
    await chat.addToolApprovalResponse({ id, approved: false, reason: 'nope, keep it' });
    await eventually(async () => (chat.status === 'ready' && textOf(chat.messages[1]) ? true : undefined));
    const shown = chat.messages[1]!.parts.find((p) => p.type === 'tool-delete_note');
    expect(shown).toMatchObject({
      state: 'output-denied',
      approval: { id, approved: false, reason: 'nope, keep it' },
    });
    expect(prompts.at(-1)).toContain('The user denied this call. Their reason: nope, keep it');
    const stored = (await threadOf('chat-core-deny', 'hal')).messages as UIMessage[];
    expect(stored[1]!.parts.find((p) => p.type === 'tool-delete_note')).toMatchObject({
      state: 'output-denied',
      approval: { id, approved: false, reason: 'nope, keep it' },
    });
    // A later turn reads the denial and its reason from the stored history.
    await chat.sendMessage({ text: 'slow then' });
    expect(prompts.at(-1)).toContain('nope, keep it');

    const approving = chatAs('chat-core-approve', 'hal');
    await approving.sendMessage({ text: 'delete note 7 again' });
    const again = approving.messages[1]!.parts.find((p) => p.type === 'tool-delete_note') as {
      approval: { id: string };
    };
    await approving.addToolApprovalResponse({ id: again.approval.id, approved: true });
    await eventually(async () =>
      approving.status === 'ready' && textOf(approving.messages[1]) ? true : undefined,
    );
    const kept = (await threadOf('chat-core-approve', 'hal')).messages as UIMessage[];
    expect(kept[1]!.parts.find((p) => p.type === 'tool-delete_note')).toMatchObject({
      state: 'output-available',
      approval: { id: again.approval.id, approved: true },
    });
  });

  it('rebuilds the message with resumeStream() after an API decision, while the call still runs', async () => {
    const chat = chatAs('chat-core-5', 'eve');
    await chat.sendMessage({ text: 'archive note 8' });
    const part = chat.messages[1]!.parts.find((p) => p.type === 'tool-archive_note') as {
      state: string;
      approval: { id: string };
    };
    expect(part.state).toBe('approval-requested');
    await fetch(api.replace('/chat', `/approvals/${part.approval.id}/decide`), {
      method: 'POST',
      headers: { 'x-test-user': 'eve', 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve', remember: true }),
    });
    // A replay from the start: it passes the pause, decided since, and waits for the rest.
    const resuming = chat.resumeStream();
    setTimeout(() => archiving.resolve(), 100);
    await resuming;
    expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(chat.messages[1]!.parts.find((p) => p.type === 'tool-archive_note')).toMatchObject({
      state: 'output-available',
      output: { archived: 8 },
    });
    expect(textOf(chat.messages[1])).toBe('All done.');
  });

  it('edits a message with sendMessage({ messageId }): it replaces that message and drops what followed', async () => {
    const chat = chatAs('chat-core-edit', 'fay');
    await chat.sendMessage({ text: 'first' });
    await chat.sendMessage({ text: 'second' });
    const first = chat.messages[0]!;
    await chat.sendMessage({ text: 'first edited', messageId: first.id });
    expect(chat.error).toBeUndefined();
    expect(chat.messages.map((m) => [m.role, m.role === 'user' ? textOf(m) : m.id])).toEqual([
      ['user', 'first edited'],
      ['assistant', chat.messages[1]!.id],
    ]);
    const thread = await threadOf('chat-core-edit', 'fay');
    const stored = thread.messages as UIMessage[];
    expect(stored.map((m) => m.id)).toEqual([first.id, chat.messages[1]!.id]);
    expect(textOf(stored[0])).toBe('first edited');
    expect(textOf(stored[1])).toBe('All done.');
    // The title is the first message's text, so editing that message renames the thread; editing
    // a later one does not.
    expect(thread.title).toBe('first edited');
    await chat.sendMessage({ text: 'third' });
    await chat.sendMessage({ text: 'third edited', messageId: chat.messages[2]!.id });
    expect(chat.error).toBeUndefined();
    expect((await threadOf('chat-core-edit', 'fay')).title).toBe('first edited');
  });

  it('takes a user message whose id is already a user message’s as its edit, and refuses an assistant message’s id', async () => {
    const chat = chatAs('chat-core-ids', 'gus');
    await chat.sendMessage({ text: 'one' });
    await chat.sendMessage({ text: 'two' });
    const [one, answer] = chat.messages;
    const post = (message: unknown) =>
      fetch(api, {
        method: 'POST',
        headers: { 'x-test-user': 'gus', 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'chat-core-ids', message }),
      });
    const taken = await post({ id: answer!.id, role: 'user', parts: [{ type: 'text', text: 'sneaky' }] });
    expect(taken.status).toBe(400);
    expect((await taken.json()).error.code).toBe('validation_failed');
    // Nothing changed, and the thread takes turns again.
    expect(((await threadOf('chat-core-ids', 'gus')).messages as UIMessage[]).length).toBe(4);
    const again = await post({ id: one!.id, role: 'user', parts: [{ type: 'text', text: 'one again' }] });
    expect(again.status).toBe(200);
    await again.text();
    const stored = (await threadOf('chat-core-ids', 'gus')).messages as UIMessage[];
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(new Set(stored.map((m) => m.id)).size).toBe(2);
    expect(textOf(stored[0])).toBe('one again');
  });

  it('lets a second tab resume a turn in flight and see the whole answer', async () => {
    const first = chatAs('chat-core-3', 'cat');
    const sending = first.sendMessage({ text: 'slow please' });
    await eventually(async () =>
      first.messages[1] && textOf(first.messages[1]).length > 0 ? true : undefined,
    );
    const second = chatAs('chat-core-3', 'cat');
    await second.resumeStream();
    await sending;
    const expected = Array.from({ length: 10 }, (_, i) => `s${i} `).join('');
    expect(textOf(second.messages.at(-1))).toBe(expected);
    expect(textOf(first.messages.at(-1))).toBe(expected);
  });
});
