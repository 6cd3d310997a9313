/**
 * Turns over the wire, black-box through `fetch` and a real Express server: streaming, tool calls, approvals, stop,
 * resume after a dropped connection, toolOutputCap and historyWindow.
 *
 * @see docs/wire.md "Turns"
 */
import { APICallError, type LanguageModelV3Prompt } from '@ai-sdk/provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { HostTool } from '../../src/agent/tools.js';
import type { Service } from '../../src/wire/create-service.js';
import type { ServiceOptions } from '../../src/wire/options.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { type ScriptedStep, scriptedModel } from './support/models.js';
import { connect, TRANSPORTS, type Transport, type TransportKind } from './support/transports.js';
import {
  assemble,
  callerFor,
  eventually,
  readTurn,
  readUntilPaused,
  resumeAfter,
  TurnReader,
  testService,
  textOf,
} from './support/wire.js';

/** A promise the test settles by hand. */
function latch<T = void>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const weather: HostTool<{ city: string }, unknown> = {
  name: 'weather',
  description: 'Weather of a city',
  input: z.object({ city: z.string() }),
  risk: 'read',
  execute: async ({ city }) => ({ city, sky: 'sunny' }),
};

/** Every store through `fetch`; the embedded store through a real Express server too. */
const COMBINATIONS: Array<[string, TransportKind]> = [
  ...STORE_KINDS.map((kind) => [kind, 'fetch'] as [string, TransportKind]),
  ...TRANSPORTS.filter((t) => t !== 'fetch').map((t) => ['pglite', t] as [string, TransportKind]),
];

for (const [kind, transportKind] of COMBINATIONS) {
  describe(`turns (${kind}, ${transportKind})`, () => {
    let store: TestStore;
    const services: Service[] = [];
    const transports: Transport[] = [];
    let users = 0;

    beforeAll(async () => {
      store = await openTestStore(kind as 'pglite' | 'postgres');
    });
    afterAll(async () => {
      for (const t of transports) await t.close();
      for (const s of services) await s.close();
      await store?.dispose();
    });

    /** A service with a scripted model, and a caller signed in as a fresh user. */
    async function setup(steps: ScriptedStep[], options: Partial<ServiceOptions> = {}) {
      const scripted = scriptedModel(steps);
      const service = await testService(store, { model: scripted.model, tools: [weather], ...options });
      services.push(service);
      const transport = await connect(transportKind, service);
      transports.push(transport);
      const user = `user-${kind}-${++users}`;
      return { service, calls: scripted.calls, call: callerFor(transport.fetch, user), user };
    }

    it('streams text and a tool call, readable by the AI SDK, and stores the thread', async () => {
      const { call } = await setup([
        { text: ['Let me ', 'check.'], toolCalls: [{ id: 'c1', name: 'weather', input: { city: 'Oslo' } }] },
        { text: ['It is ', 'sunny.'] },
      ]);
      const response = await call('/chat', { method: 'POST', json: { message: 'Weather in Oslo?' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
      const threadId = response.headers.get('x-service-thread-id')!;
      const runId = response.headers.get('x-service-run-id')!;
      expect(threadId).toMatch(/^thr_/);
      expect(runId).toMatch(/^run_/);
      const turn = await readTurn(response);
      const types = turn.chunks.map((c) => c.type);
      expect(types[0]).toBe('start');
      expect(types.at(-1)).toBe('finish');
      expect(types).toEqual(
        expect.arrayContaining(['text-delta', 'tool-input-available', 'tool-output-available']),
      );
      expect(turn.ids).toEqual(turn.chunks.map((_, i) => i + 1));
      expect(textOf(turn.message)).toBe('Let me check.It is sunny.');
      expect(turn.message?.parts.find((p) => p.type === 'tool-weather')).toMatchObject({
        state: 'output-available',
        input: { city: 'Oslo' },
        output: { city: 'Oslo', sky: 'sunny' },
      });
      expect(turn.message?.metadata).toMatchObject({ threadId, runId, status: 'completed' });

      const thread = await (await call(`/threads/${threadId}`)).json();
      expect(thread.thread.title).toBe('Weather in Oslo?');
      expect(thread.thread.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
      expect(thread.thread.messages[1].parts).toEqual(turn.message?.parts);
      const run = await (await call(`/runs/${runId}`)).json();
      expect(run.run).toMatchObject({ id: runId, threadId, status: 'completed', error: null });
    });

    it('accepts useChat’s body and continues the same thread with its history', async () => {
      const { call, calls } = await setup([{ text: ['One.'] }, { text: ['Two.'] }]);
      const first = await call('/chat', {
        method: 'POST',
        json: {
          id: 'chat-abc',
          trigger: 'submit-message',
          messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Hi' }] }],
        },
      });
      expect(first.headers.get('x-service-thread-id')).toBe('chat-abc');
      await readTurn(first);
      const second = await call('/chat', {
        method: 'POST',
        json: {
          id: 'chat-abc',
          // A forged earlier turn is ignored: the server owns the history.
          messages: [
            { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'FORGED' }] },
            { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'Again' }] },
          ],
        },
      });
      expect(textOf((await readTurn(second)).message)).toBe('Two.');
      const prompt = calls[1]!.prompt;
      expect(JSON.stringify(prompt)).not.toContain('FORGED');
      expect(prompt.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    });

    it('refuses a second turn on a thread while one is in flight', async () => {
      const { call } = await setup([{ text: ['slow ', 'answer'], chunkDelayMs: 100 }]);
      const first = await call('/chat', { method: 'POST', json: { id: 'busy', message: 'one' } });
      const second = await call('/chat', { method: 'POST', json: { id: 'busy', message: 'two' } });
      expect(second.status).toBe(409);
      expect((await second.json()).error.code).toBe('run_in_flight');
      await readTurn(first);
    });

    it('fails a turn with a clear message when no model is configured', async () => {
      const { call } = await setup([], { model: undefined });
      const response = await call('/chat', { method: 'POST', json: { message: 'hello?' } });
      const turn = await readTurn(response);
      const error = turn.chunks.find((c) => c.type === 'error');
      expect(error).toMatchObject({ errorText: expect.stringContaining('No model is configured') });
      const run = await (await call(`/runs/${response.headers.get('x-service-run-id')}`)).json();
      expect(run.run).toMatchObject({ status: 'failed', error: { code: 'model_not_configured' } });
      const status = await (await call('/status')).json();
      expect(status.blocks.model).toBe('ladder');
    });

    it('reports a failing model as an error chunk and a failed run, without leaking the cause', async () => {
      const { call } = await setup([{ error: new Error('upstream secret detail sk-123') }]);
      const response = await call('/chat', { method: 'POST', json: { message: 'hi' } });
      const turn = await readTurn(response);
      const errorText = JSON.stringify(turn.chunks.filter((c) => c.type === 'error'));
      expect(errorText).toContain('The model call failed');
      expect(errorText).not.toContain('sk-123');
      // The message still ends as every turn's does: start, the error, finish.
      expect(turn.chunks.at(-1)).toMatchObject({ type: 'finish', messageMetadata: { status: 'failed' } });
      const run = await (await call(`/runs/${response.headers.get('x-service-run-id')}`)).json();
      expect(run.run.status).toBe('failed');
    });

    it('tells the user the workspace is out of credit when the model call is refused with 402', async () => {
      const refusal = new APICallError({
        message: 'Payment Required',
        url: 'http://127.0.0.1:9/v1/chat/completions',
        requestBodyValues: {},
        statusCode: 402,
        responseBody:
          '{"error":{"code":"balance_exhausted","message":"secret-ledger-7","suggested_fix":"Top up"}}',
      });
      const { call } = await setup([{ error: refusal }]);
      const response = await call('/chat', { method: 'POST', json: { message: 'hi' } });
      const turn = await readTurn(response);
      expect(turn.chunks.find((c) => c.type === 'error')).toEqual({
        type: 'error',
        errorText: 'The workspace is out of credit: top it up, then send the message again.',
      });
      expect(JSON.stringify(turn.chunks)).not.toContain('secret-ledger-7');
      const run = await (await call(`/runs/${response.headers.get('x-service-run-id')}`)).json();
      expect(run.run).toMatchObject({ status: 'failed', error: { code: 'insufficient_credit' } });
    });

    it('parks a tool that needs approval, resumes it once approved over the API, and completes', async () => {
      let deleted = 0;
      const { call } = await setup(
        [
          { toolCalls: [{ id: 'd1', name: 'delete_file', input: { path: '/tmp/a' } }] },
          { text: ['Deleted.'] },
        ],
        {
          tools: [
            {
              name: 'delete_file',
              description: 'Deletes a file',
              input: z.object({ path: z.string() }),
              risk: 'destructive',
              execute: async ({ path }: { path: string }) => {
                deleted++;
                return { deleted: path };
              },
            },
          ],
        },
      );
      const response = await call('/chat', { method: 'POST', json: { message: 'delete /tmp/a' } });
      const runId = response.headers.get('x-service-run-id')!;
      const threadId = response.headers.get('x-service-thread-id')!;
      // The stream ends at the pause: the call waits for a decision.
      const paused = await readUntilPaused(new TurnReader(response));
      const [approvalId] = paused.approvalIds;
      expect(approvalId).toMatch(/^apr_/);
      expect(paused.frames.at(-1)!.chunk).toEqual({
        type: 'message-metadata',
        messageMetadata: { threadId, runId, status: 'awaiting_approval', resumeAfter: paused.resumeAfter },
      });
      expect(deleted).toBe(0);

      const pending = await (await call('/approvals?status=pending')).json();
      expect(pending.approvals).toHaveLength(1);
      expect(pending.approvals[0]).toMatchObject({
        id: approvalId,
        status: 'pending',
        runId,
        request: { tool: 'delete_file', toolCallId: 'd1', input: { path: '/tmp/a' } },
      });
      expect((await (await call(`/runs/${runId}`)).json()).run.status).toBe('awaiting_approval');

      const decided = await call(`/approvals/${approvalId}/decide`, {
        method: 'POST',
        json: { decision: 'approve' },
      });
      expect(decided.status).toBe(200);
      const rest = await resumeAfter(call, threadId, paused.resumeAfter);
      expect(rest[0]!.id).toBe(paused.resumeAfter + 1);
      const message = await assemble([...paused.frames, ...rest].map((f) => f.chunk));
      expect(message?.parts.find((p) => p.type === 'tool-delete_file')).toMatchObject({
        state: 'output-available',
        output: { deleted: '/tmp/a' },
      });
      expect(textOf(message)).toBe('Deleted.');
      expect(deleted).toBe(1);
      const approval = await (await call(`/approvals/${approvalId}`)).json();
      expect(approval.approval.status).toBe('executed');
      expect((await (await call(`/runs/${runId}`)).json()).run.status).toBe('completed');
      // A second decision is refused: nothing is pending any more.
      const again = await call(`/approvals/${approvalId}/decide`, {
        method: 'POST',
        json: { decision: 'deny' },
      });
      expect(again.status).toBe(409);
      expect((await again.json()).error.code).toBe('approval_not_pending');
    });

    it('reports a declined call as denied to the client and the model, without running it', async () => {
      let ran = false;
      const { call, calls } = await setup(
        [{ toolCalls: [{ id: 'x1', name: 'wipe', input: {} }] }, { text: ['Understood.'] }],
        {
          tools: [
            {
              name: 'wipe',
              description: 'Wipes everything',
              input: z.object({}),
              needsApproval: true,
              execute: async () => {
                ran = true;
                return 'wiped';
              },
            },
          ],
        },
      );
      const response = await call('/chat', { method: 'POST', json: { message: 'wipe it' } });
      const paused = await readUntilPaused(new TurnReader(response));
      const [id] = paused.approvalIds;
      await call(`/approvals/${id}/decide`, { method: 'POST', json: { decision: 'deny' } });
      const threadId = response.headers.get('x-service-thread-id')!;
      const frames = await resumeAfter(call, threadId, paused.resumeAfter);
      expect(frames.some((f) => f.chunk.type === 'tool-output-denied')).toBe(true);
      expect(ran).toBe(false);
      expect(JSON.stringify(calls[1]!.prompt)).toContain('The user denied this call.');
      expect((await (await call(`/approvals/${id}`)).json()).approval.status).toBe('declined');
    });

    it('stops during a tool call: the call drains, no further step runs, the run ends cancelled', async () => {
      const started = latch();
      const release = latch();
      let finished = false;
      const { call, calls } = await setup(
        [{ text: ['Working.'], toolCalls: [{ id: 's1', name: 'slow', input: {} }] }, { text: ['NEVER'] }],
        {
          tools: [
            {
              name: 'slow',
              description: 'Takes a while',
              input: z.object({}),
              execute: async () => {
                started.open();
                await release.promise;
                finished = true;
                return { done: true };
              },
            },
          ],
        },
      );
      const response = await call('/chat', { method: 'POST', json: { message: 'go' } });
      const runId = response.headers.get('x-service-run-id')!;
      const reader = new TurnReader(response);
      await started.promise;
      const stop = await call(`/runs/${runId}/stop`, { method: 'POST', json: {} });
      expect(stop.status).toBe(202);
      expect((await stop.json()).run.stopReason).toBe('user');
      release.open();
      const frames = await reader.rest();
      const message = await assemble(frames.map((f) => f.chunk));
      expect(finished).toBe(true);
      expect(message?.parts.find((p) => p.type === 'tool-slow')).toMatchObject({ state: 'output-available' });
      expect(textOf(message)).toBe('Working.');
      expect(calls).toHaveLength(1);
      const run = await eventually(async () => {
        const r = (await (await call(`/runs/${runId}`)).json()).run;
        return r.status === 'cancelled' ? r : undefined;
      });
      expect(run).toMatchObject({ status: 'cancelled', stopReason: 'user' });
      // Stopping again is idempotent.
      const again = await call(`/runs/${runId}/stop`, { method: 'POST', json: {} });
      expect(again.status).toBe(202);
      expect((await again.json()).run).toMatchObject({ status: 'cancelled', stopReason: 'user' });
    });

    it('keeps nothing of a run whose thread was deleted, when a new turn took the thread id meanwhile', async () => {
      const started = latch();
      const release = latch();
      const warnings: string[] = [];
      const { call } = await setup(
        [{ toolCalls: [{ id: 'g1', name: 'slow', input: {} }] }, { text: ['Fresh answer.'] }],
        {
          logger: { info() {}, error() {}, warn: (message) => warnings.push(message) },
          tools: [
            {
              name: 'slow',
              description: 'Takes a while',
              input: z.object({}),
              execute: async () => {
                started.open();
                await release.promise;
                return { old: true };
              },
            },
          ],
        },
      );
      const old = await call('/chat', { method: 'POST', json: { id: 'del-1', message: 'old question' } });
      const oldReading = readTurn(old);
      await started.promise;
      expect((await call('/threads/del-1', { method: 'DELETE', json: {} })).status).toBe(200);
      // useChat keeps its chat id: the next message goes to the same thread id, now a new thread.
      const fresh = await call('/chat', { method: 'POST', json: { id: 'del-1', message: 'fresh start' } });
      expect(fresh.status).toBe(200);
      await readTurn(fresh);
      release.open();
      // Its stream ends once the old run has written what it would: its answer, its last chunks.
      await oldReading;
      const thread = (await (await call('/threads/del-1')).json()).thread;
      expect(thread.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
      expect(textOf(thread.messages[1])).toBe('Fresh answer.');
      expect(JSON.stringify(thread.messages)).not.toContain(old.headers.get('x-service-run-id'));
      expect(warnings).not.toContain('run chunks not stored');
    });

    it('drops the parked approvals of a stopped run', async () => {
      const { call } = await setup([{ toolCalls: [{ id: 'p1', name: 'rm', input: {} }] }], {
        tools: [
          {
            name: 'rm',
            description: 'Removes',
            input: z.object({}),
            risk: 'destructive',
            execute: () => 'x',
          },
        ],
      });
      const response = await call('/chat', { method: 'POST', json: { message: 'rm' } });
      const runId = response.headers.get('x-service-run-id')!;
      const threadId = response.headers.get('x-service-thread-id')!;
      const paused = await readUntilPaused(new TurnReader(response));
      const [id] = paused.approvalIds;
      await call(`/runs/${runId}/stop`, { method: 'POST', json: {} });
      const frames = await resumeAfter(call, threadId, paused.resumeAfter);
      expect(frames.map((f) => f.chunk.type)).toEqual(['tool-output-denied', 'abort', 'finish']);
      expect((await (await call(`/approvals/${id}`)).json()).approval.status).toBe('dropped');
      expect((await (await call(`/runs/${runId}`)).json()).run.status).toBe('cancelled');
    });

    it('keeps a turn running when its client drops, and resumes exactly the rest on reconnect', async () => {
      const words = Array.from({ length: 12 }, (_, i) => `w${i} `);
      const { call } = await setup([{ text: words, chunkDelayMs: 40 }]);
      const response = await call('/chat', { method: 'POST', json: { message: 'long answer please' } });
      const threadId = response.headers.get('x-service-thread-id')!;
      const runId = response.headers.get('x-service-run-id')!;
      const first = new TurnReader(response);
      await first.until((f) => f.chunk.type === 'text-delta');
      await first.drop();
      const seen = first.frames;
      const lastSeen = seen.at(-1)!.id;

      const resumed = await call(`/threads/${threadId}/stream`, {
        headers: { 'last-event-id': String(lastSeen) },
      });
      expect(resumed.status).toBe(200);
      expect(resumed.headers.get('x-service-run-id')).toBe(runId);
      const rest = await new TurnReader(resumed).rest();
      const ids = [...seen, ...rest].map((f) => f.id);
      expect(ids).toEqual(ids.map((_, i) => i + 1));
      const message = await assemble([...seen, ...rest].map((f) => f.chunk));
      expect(textOf(message)).toBe(words.join(''));
      expect((await (await call(`/runs/${runId}`)).json()).run.status).toBe('completed');
      // A finished run with no cursor: nothing to resume (useChat's resume answer).
      expect((await call(`/threads/${threadId}/stream`)).status).toBe(204);
      // With a cursor, the finished run still replays what came after it, from the store.
      const late = await call(`/chat/${threadId}/stream?after=${ids.length - 2}`);
      expect((await new TurnReader(late).rest()).map((f) => f.id)).toEqual([ids.length - 1, ids.length]);
    });

    it('refuses a stream cursor that is not one, naming the header or the query it came in', async () => {
      const { call } = await setup([{ text: ['Hi.'] }]);
      const response = await call('/chat', { method: 'POST', json: { message: 'hello' } });
      const threadId = response.headers.get('x-service-thread-id')!;
      const runId = response.headers.get('x-service-run-id')!;
      await readTurn(response);
      for (const path of [
        `/threads/${threadId}/stream`,
        `/chat/${threadId}/stream`,
        `/runs/${runId}/stream`,
      ]) {
        const byHeader = await call(path, { headers: { 'last-event-id': 'abc' } });
        expect(byHeader.status, path).toBe(400);
        const header = (await byHeader.json()) as { error: { code: string; message: string } };
        expect(header.error.code).toBe('validation_failed');
        expect(header.error.message).toMatch(/^headers\.last-event-id: /);
        const byQuery = await call(`${path}?after=-1`);
        expect(byQuery.status, path).toBe(400);
        expect(((await byQuery.json()) as { error: { message: string } }).error.message).toMatch(
          /^query\.after: /,
        );
      }
    });

    it('replays a run in flight from the start to a reader without a cursor (useChat resume)', async () => {
      const { call } = await setup([{ text: ['a', 'b', 'c', 'd'], chunkDelayMs: 50 }]);
      const response = await call('/chat', { method: 'POST', json: { message: 'x' } });
      const threadId = response.headers.get('x-service-thread-id')!;
      const original = readTurn(response);
      const resumed = await call(`/chat/${threadId}/stream`);
      expect(resumed.status).toBe(200);
      const again = await readTurn(resumed);
      expect(textOf(again.message)).toBe('abcd');
      expect(textOf((await original).message)).toBe('abcd');
    });

    it('truncates a tool result to toolOutputCap for the model and stores it whole', async () => {
      const big = 'x'.repeat(500);
      const { call, calls } = await setup(
        [{ toolCalls: [{ id: 'b1', name: 'dump', input: {} }] }, { text: ['ok'] }],
        {
          toolOutputCap: 50,
          tools: [
            { name: 'dump', description: 'Dumps', input: z.object({}), execute: () => ({ data: big }) },
          ],
        },
      );
      const response = await call('/chat', { method: 'POST', json: { message: 'dump' } });
      const threadId = response.headers.get('x-service-thread-id')!;
      await readTurn(response);
      const toolMessage = (calls[1]!.prompt as LanguageModelV3Prompt).find((m) => m.role === 'tool')!;
      const part = toolMessage.content[0] as { type: string; output: { type: string; value: string } };
      expect(part.output.type).toBe('text');
      expect(part.output.value.startsWith(JSON.stringify({ data: big }).slice(0, 50))).toBe(true);
      expect(part.output.value).toContain('[truncated: showing 50 of 511 characters]');
      const thread = await (await call(`/threads/${threadId}`)).json();
      const stored = thread.thread.messages[1].parts.find((p: { type: string }) => p.type === 'tool-dump');
      expect(stored.output).toEqual({ data: big });
    });

    it('cuts tool results at 32000 characters by default', async () => {
      const big = 'w'.repeat(40_000);
      const { call, calls } = await setup(
        [{ toolCalls: [{ id: 'd1', name: 'dump', input: {} }] }, { text: ['ok'] }],
        { tools: [{ name: 'dump', description: 'Dumps', input: z.object({}), execute: () => big }] },
      );
      await readTurn(await call('/chat', { method: 'POST', json: { message: 'dump' } }));
      const toolMessage = (calls[1]!.prompt as LanguageModelV3Prompt).find((m) => m.role === 'tool')!;
      const value = (toolMessage.content[0] as { output: { value: string } }).output.value;
      expect(value).toBe(`${big.slice(0, 32_000)}\n[truncated: showing 32000 of 40000 characters]`);
    });

    it('leaves tool results whole when toolOutputCap is 0', async () => {
      const big = 'y'.repeat(40_000);
      const { call, calls } = await setup(
        [{ toolCalls: [{ id: 'z1', name: 'dump', input: {} }] }, { text: ['ok'] }],
        {
          toolOutputCap: 0,
          tools: [{ name: 'dump', description: 'Dumps', input: z.object({}), execute: () => big }],
        },
      );
      await readTurn(await call('/chat', { method: 'POST', json: { message: 'dump' } }));
      const toolMessage = (calls[1]!.prompt as LanguageModelV3Prompt).find((m) => m.role === 'tool')!;
      expect((toolMessage.content[0] as { output: { value: string } }).output.value).toBe(big);
    });

    it('re-sends the last historyWindow messages and never splits a tool call from its result', async () => {
      const { call, calls } = await setup(
        [
          { toolCalls: [{ id: 'h1', name: 'weather', input: { city: 'Rome' } }] },
          { text: ['Sunny in Rome.'] },
          { text: ['Second answer.'] },
        ],
        { historyWindow: 3 },
      );
      await readTurn(await call('/chat', { method: 'POST', json: { id: 'hw', message: 'first question' } }));
      await readTurn(await call('/chat', { method: 'POST', json: { id: 'hw', message: 'second question' } }));
      // Full history: user, assistant(call), tool(result), assistant(text), user = 5 messages.
      // The last 3 would start on the tool result: the window shrinks past it instead.
      const prompt = calls[2]!.prompt as LanguageModelV3Prompt;
      expect(prompt.map((m) => m.role)).toEqual(['assistant', 'user']);
      expect(JSON.stringify(prompt)).not.toContain('first question');
      expect(JSON.stringify(prompt)).toContain('Sunny in Rome.');
      for (const [i, message] of prompt.entries()) {
        if (message.role !== 'tool') continue;
        expect(prompt[i - 1]?.role).toBe('assistant');
      }
    });

    it('keeps a whole tool pair when the window reaches its call', async () => {
      const { call, calls } = await setup(
        [
          { toolCalls: [{ id: 'k1', name: 'weather', input: { city: 'Rome' } }] },
          { text: ['Sunny.'] },
          { text: ['Second.'] },
        ],
        { historyWindow: 4 },
      );
      await readTurn(await call('/chat', { method: 'POST', json: { id: 'hw4', message: 'q1' } }));
      await readTurn(await call('/chat', { method: 'POST', json: { id: 'hw4', message: 'q2' } }));
      const prompt = calls[2]!.prompt as LanguageModelV3Prompt;
      expect(prompt.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant', 'user']);
      const callPart = prompt[0]!.content as Array<{ type: string; toolCallId?: string }>;
      expect(callPart.some((p) => p.type === 'tool-call' && p.toolCallId === 'k1')).toBe(true);
    });
  });
}
