/**
 * Long conversations over real HTTP: useChat re-sends the whole history with every message, and
 * the wire reads only the last one of it, so a chat far past `maxBodyBytes` keeps working. The
 * client is the AI SDK's own `DefaultChatTransport`; the server a real Express server on loopback.
 *
 * @see docs/wire.md "Turns"
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createService, type Service } from '../../src/wire/create-service.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { scriptedModel } from './support/models.js';
import { connect, type Transport } from './support/transports.js';
import { callerFor, ORIGIN, readTurn, testService, textOf } from './support/wire.js';

const MiB = 1024 * 1024;

let store: TestStore;
let service: Service;
let transport: Transport;
let api: string;
const scripted = scriptedModel([{ text: ['Still ', 'here.'] }]);

beforeAll(async () => {
  store = await openTestStore();
  service = await testService(store, { model: scripted.model });
  transport = await connect('express', service);
  api = `${transport.url ?? ORIGIN}/api/service/chat`;
});
afterAll(async () => {
  await transport?.close();
  await service?.close();
  await store?.dispose();
});

/** `count` earlier turns of about `bytes` each, as useChat holds them. */
function history(count: number, bytes: number): UIMessage[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `m${i}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    parts: [{ type: 'text', text: `turn ${i} "quoted" \\ ]}${'x'.repeat(bytes)}` }],
  }));
}

const newMessage = (text: string): UIMessage => ({
  id: 'm-new',
  role: 'user',
  parts: [{ type: 'text', text }],
});

/** Sends `messages` as useChat does and reads the answer as it does; also reports the body size sent. */
async function send(
  chatId: string,
  messages: UIMessage[],
  options: Partial<ConstructorParameters<typeof DefaultChatTransport<UIMessage>>[0]> = {},
) {
  let sentBytes = 0;
  const chat = new DefaultChatTransport<UIMessage>({
    api,
    headers: { 'x-test-user': 'lou' },
    fetch: async (url, init) => {
      sentBytes = Buffer.byteLength(String(init?.body ?? ''));
      return fetch(url, init);
    },
    ...options,
  });
  const stream = await chat.sendMessages({
    chatId,
    messages,
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  let answer: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream })) answer = message;
  return { answer, sentBytes };
}

/** Bytes the process holds live: collected first, so only what is still referenced counts. */
function liveBytes(): number {
  collectGarbage();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** A POST of `parts` streamed one after another (`repeat` times the middle one), sized or not. */
function streamedPost(
  parts: { head: string; middle: Uint8Array; repeat: number; tail: string },
  declareLength: boolean,
): Promise<Response> {
  const head = Buffer.from(parts.head);
  const tail = Buffer.from(parts.tail);
  const length = head.byteLength + parts.middle.byteLength * parts.repeat + tail.byteLength;
  let sent = -1;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === -1) controller.enqueue(head);
      else if (sent < parts.repeat) controller.enqueue(parts.middle);
      else if (sent === parts.repeat) controller.enqueue(tail);
      else controller.close();
      sent++;
    },
  });
  return fetch(api, {
    method: 'POST',
    headers: {
      'x-test-user': 'lou',
      'content-type': 'application/json',
      ...(declareLength ? { 'content-length': String(length) } : {}),
    },
    body,
    duplex: 'half',
  } as RequestInit);
}

describe('a useChat body past maxBodyBytes', () => {
  it('streams a turn for a 2 MB history, reading only its last message', async () => {
    const messages = [...history(220, 10_000), newMessage('What now?')];
    const callsBefore = scripted.calls.length;
    const { answer, sentBytes } = await send('long-chat-1', messages);
    expect(sentBytes).toBeGreaterThan(2 * MiB);
    expect(textOf(answer)).toBe('Still here.');
    // The server owns the history: the model saw the new message and none of the re-sent ones.
    const prompt = JSON.stringify(scripted.calls.slice(callsBefore)[0]?.prompt);
    expect(prompt).toContain('What now?');
    expect(prompt).not.toContain('turn 0');
    const thread = await (
      await fetch(api.replace('/chat', '/threads/long-chat-1'), { headers: { 'x-test-user': 'lou' } })
    ).json();
    expect(thread.thread.messages.map((m: UIMessage) => m.role)).toEqual(['user', 'assistant']);
  });

  it('holds an earlier message larger than maxBodyBytes, but not a last one', async () => {
    const bigEarlier = [...history(1, 1.5 * MiB), newMessage('Fine?')];
    expect(textOf((await send('long-chat-2', bigEarlier)).answer)).toBe('Still here.');
    // A last message just under the limit is taken whole, as text: the limit is in bytes.
    const nearLimit = [...history(2, 100), newMessage('z'.repeat(0.9 * MiB))];
    expect(textOf((await send('long-chat-2b', nearLimit)).answer)).toBe('Still here.');
    const bigLast = [...history(2, 100), newMessage('y'.repeat(1.5 * MiB))];
    await expect(send('long-chat-3', bigLast)).rejects.toThrow(/last message.*larger than 1048576 bytes/);
  });

  it('sends only the last message with prepareSendMessagesRequest, as docs/wire.md shows', async () => {
    const messages = [...history(200, 10_000), newMessage('Short and sweet')];
    const { answer, sentBytes } = await send('long-chat-4', messages, {
      prepareSendMessagesRequest: ({ id, messages, trigger, messageId, body }) => ({
        body: { ...body, id, messages: messages.slice(-1), trigger, messageId },
      }),
    });
    expect(sentBytes).toBeLessThan(1000);
    expect(textOf(answer)).toBe('Still here.');
  });

  it('answers 400 invalid_json for malformed JSON at the end of a long body', async () => {
    const body = JSON.stringify({ id: 'long-chat-5', messages: [...history(200, 10_000), newMessage('hi')] });
    for (const broken of [body.slice(0, -1), `${body}]`, body.replace(/"hi"\}\]\}\]\}$/, '"hi"}]}}]}')]) {
      expect(broken).not.toBe(body);
      const response = await fetch(api, {
        method: 'POST',
        headers: { 'x-test-user': 'lou', 'content-type': 'application/json' },
        body: broken,
      });
      expect(response.status).toBe(400);
      expect((await response.json()).error.code).toBe('invalid_json');
    }
  });

  it('refuses a 100 MB body with 413, naming the ceiling and the fix, without holding it', async () => {
    const message = Buffer.from(`${JSON.stringify(history(1, 64 * 1024 - 80)[0])},`);
    const parts = {
      head: '{"id":"long-chat-6","messages":[',
      middle: message,
      repeat: Math.ceil((100 * MiB) / message.byteLength),
      tail: `${JSON.stringify(newMessage('hi'))}]}`,
    };
    for (const declareLength of [true, false]) {
      // Live memory, after a collection: garbage the streaming leaves behind is not held, and how
      // much of it an allocator keeps resident differs between Node versions.
      const liveBefore = liveBytes();
      let livePeak = liveBefore;
      const sampling = setInterval(() => {
        livePeak = Math.max(livePeak, liveBytes());
      }, 20);
      try {
        const response = await streamedPost(parts, declareLength);
        expect(response.status).toBe(413);
        const { error } = await response.json();
        expect(error.code).toBe('payload_too_large');
        expect(error.message).toContain(`larger than ${64 * MiB} bytes`);
        expect(error.message).toContain('prepareSendMessagesRequest');
      } finally {
        clearInterval(sampling);
      }
      // The server (this process, which also writes the body) never held more than a few chunks
      // of it at once; buffered up to the 64 MiB ceiling it would hold tens of MiB at some sample.
      expect(livePeak - liveBefore).toBeLessThan(16 * MiB);
    }
  }, 60_000);
});

describe('maxChatHistoryBytes', () => {
  it('caps the whole chat body, while maxBodyBytes caps its last message', async () => {
    const small = await testService(store, {
      model: scripted.model,
      maxBodyBytes: 1000,
      maxChatHistoryBytes: 5000,
    });
    try {
      const call = callerFor(small.fetch, 'lou');
      const body = (count: number) => ({
        id: `capped-${count}`,
        messages: [...history(count, 400), newMessage('hi')],
      });
      const fits = await call('/chat', { method: 'POST', json: body(8) });
      expect(textOf((await readTurn(fits)).message)).toBe('Still here.');
      const past = await call('/chat', { method: 'POST', json: body(12) });
      expect(past.status).toBe(413);
      expect((await past.json()).error.message).toContain('larger than 5000 bytes');
    } finally {
      await small.close();
    }
  });

  it('is validated at composition: a positive integer, not below maxBodyBytes', async () => {
    const compose = (options: object) => createService({ store, principal: () => null, env: {}, ...options });
    await expect(compose({ maxChatHistoryBytes: 0 })).rejects.toThrow(/maxChatHistoryBytes/);
    await expect(compose({ maxChatHistoryBytes: 1.5 })).rejects.toThrow(/maxChatHistoryBytes/);
    await expect(compose({ maxBodyBytes: 4096, maxChatHistoryBytes: 2048 })).rejects.toThrow(
      'maxChatHistoryBytes is below maxBodyBytes',
    );
    await expect(compose({ maxChatHistoryBytes: 512 })).rejects.toThrow(
      'maxChatHistoryBytes is below maxBodyBytes',
    );
  });
});
