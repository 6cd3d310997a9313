/**
 * File parts in a chat message (the AI SDK's `file` parts): a data URL is stored as one of the
 * user's files and the stored thread keeps its URL; an uploaded file is referenced by its URL; the
 * model gets the bytes either way. Other URLs, and other users' files, are refused.
 *
 * @see docs/wire.md "Files in a chat message"
 */
import { randomBytes } from 'node:crypto';
import type { LanguageModelV3CallOptions } from '@ai-sdk/provider';
import type { UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { reactiveModel } from './support/models.js';
import { type Caller, callerFor, readTurn, testService } from './support/wire.js';

/** The bytes of every file part the model was given, per call. */
function fileBytesOf(options: LanguageModelV3CallOptions): Buffer[] {
  const found: Buffer[] = [];
  for (const message of options.prompt) {
    if (message.role !== 'user') continue;
    for (const part of message.content) {
      if (part.type !== 'file') continue;
      const data = part.data;
      if (data instanceof Uint8Array) found.push(Buffer.from(data));
      else if (data instanceof URL) found.push(Buffer.from(data.href.split(',')[1] ?? '', 'base64'));
      else if (data.startsWith('data:')) found.push(Buffer.from(data.split(',')[1] ?? '', 'base64'));
      else found.push(Buffer.from(data, 'base64'));
    }
  }
  return found;
}

for (const kind of STORE_KINDS) {
  describe(`wire chat file parts (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    let ada: Caller;
    let bob: Caller;
    const seen: Buffer[][] = [];

    beforeAll(async () => {
      store = await openTestStore(kind);
      const model = reactiveModel((options) => {
        seen.push(fileBytesOf(options));
        return { text: ['Got it.'] };
      });
      service = await testService(store, { model });
      ada = callerFor((r) => service.fetch(r), 'ada');
      bob = callerFor((r) => service.fetch(r), 'bob');
    });
    afterAll(async () => {
      await service?.close();
      await store?.dispose();
    });

    const send = (caller: Caller, id: string, parts: unknown[]) =>
      caller('/chat', {
        method: 'POST',
        json: { id, trigger: 'submit-message', messages: [{ id: `m-${id}`, role: 'user', parts }] },
      });

    it('stores a data URL file part (well above 75 KB) as a file, keeps its URL, and gives the model its bytes', async () => {
      const bytes = randomBytes(300 * 1024);
      const answer = await send(ada, 'inline', [
        { type: 'text', text: 'What is in this picture?' },
        {
          type: 'file',
          mediaType: 'image/png',
          filename: 'cat.png',
          url: `data:image/png;base64,${bytes.toString('base64')}`,
        },
      ]);
      expect(answer.status).toBe(200);
      await readTurn(answer);
      expect(seen.at(-1)).toEqual([bytes]);

      const files = (await (await ada('/files')).json()) as {
        files: { id: string; name: string; size: number }[];
      };
      const stored = files.files.find((f) => f.name === 'cat.png');
      expect(stored?.size).toBe(bytes.length);
      const thread = (await (await ada('/threads/inline')).json()) as { thread: { messages: UIMessage[] } };
      const part = thread.thread.messages[0]!.parts.find((p) => p.type === 'file');
      expect(part).toEqual({
        type: 'file',
        mediaType: 'image/png',
        filename: 'cat.png',
        url: `/api/service/files/${stored!.id}/content`,
      });
      const content = await ada(`/files/${stored!.id}/content`);
      expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);
    });

    it('gives the model an empty file as empty, sent inline or uploaded, and the turn ends', async () => {
      const inline = await send(ada, 'empty-inline', [
        { type: 'text', text: 'hi' },
        { type: 'file', mediaType: 'text/plain', filename: 'empty.txt', url: 'data:text/plain;base64,' },
      ]);
      expect(inline.status).toBe(200);
      await readTurn(inline);
      expect(seen.at(-1)).toEqual([Buffer.alloc(0)]);

      const uploaded = await ada('/files', {
        method: 'POST',
        headers: {
          'x-service-upload': 'raw',
          'content-type': 'text/plain',
          'x-service-file-name': 'none.txt',
        },
        body: new Uint8Array(0),
      });
      expect(uploaded.status).toBe(201);
      const { file } = (await uploaded.json()) as { file: { id: string; size: number } };
      expect(file.size).toBe(0);
      const content = await ada(`/files/${file.id}/content`);
      expect((await content.arrayBuffer()).byteLength).toBe(0);
      const byUrl = await send(ada, 'empty-ref', [
        { type: 'text', text: 'hi' },
        { type: 'file', mediaType: 'text/plain', url: `/api/service/files/${file.id}/content` },
      ]);
      expect(byUrl.status).toBe(200);
      await readTurn(byUrl);
      expect(seen.at(-1)).toEqual([Buffer.alloc(0)]);
    });

    it('takes an uploaded file larger than a JSON body by its URL', async () => {
      const bytes = randomBytes(1536 * 1024);
      const uploaded = await ada('/files', {
        method: 'POST',
        headers: {
          'x-service-upload': 'raw',
          'content-type': 'application/pdf',
          'x-service-file-name': 'big.pdf',
        },
        body: bytes,
      });
      const { file } = (await uploaded.json()) as { file: { id: string } };
      const answer = await send(ada, 'ref', [
        { type: 'text', text: 'Summarize' },
        {
          type: 'file',
          mediaType: 'application/pdf',
          url: `http://host.test/api/service/files/${file.id}/content`,
        },
      ]);
      expect(answer.status).toBe(200);
      await readTurn(answer);
      expect(seen.at(-1)).toEqual([bytes]);
      const thread = (await (await ada('/threads/ref')).json()) as { thread: { messages: UIMessage[] } };
      expect(thread.thread.messages[0]!.parts[1]).toMatchObject({
        url: `/api/service/files/${file.id}/content`,
        filename: 'big.pdf',
      });
    });

    it("refuses another user's file, URLs the server would have to fetch, and malformed data URLs", async () => {
      const uploaded = await ada('/files', {
        method: 'POST',
        headers: { 'x-service-upload': 'raw', 'content-type': 'text/plain' },
        body: 'ada only',
      });
      const { file } = (await uploaded.json()) as { file: { id: string } };
      for (const url of [
        `/api/service/files/${file.id}/content`,
        'https://example.test/cat.png',
        'data:image/png;base64,@@@',
      ]) {
        const answer = await send(bob, `refused-${seen.length}`, [
          { type: 'text', text: 'look' },
          { type: 'file', mediaType: 'image/png', url },
        ]);
        expect(answer.status, url).toBe(400);
        const body = (await answer.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe('validation_failed');
        // Named where the client put it: the last of useChat's messages.
        expect(body.error.message).toContain('body.messages[-1].parts.1.url');
      }
    });

    it('turns a file deleted since into a note for the model, and the turn goes on', async () => {
      const bytes = randomBytes(1000);
      const first = await send(ada, 'deleted', [
        { type: 'text', text: 'keep this' },
        {
          type: 'file',
          mediaType: 'image/png',
          filename: 'gone.png',
          url: `data:image/png;base64,${bytes.toString('base64')}`,
        },
      ]);
      await readTurn(first);
      const files = (await (await ada('/files')).json()) as { files: { id: string; name: string }[] };
      const gone = files.files.find((f) => f.name === 'gone.png')!;
      await ada(`/files/${gone.id}`, { method: 'DELETE', json: {} });
      const next = await ada('/chat', { method: 'POST', json: { id: 'deleted', message: 'and now?' } });
      expect(next.status).toBe(200);
      const turn = await readTurn(next);
      expect(turn.chunks.some((c) => c.type === 'finish')).toBe(true);
      expect(seen.at(-1)).toEqual([]);
    });
  });
}
