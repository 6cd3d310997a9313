/**
 * A turn's lifecycle as a `useChat` client drives it, black-box over a real Express server on
 * loopback: a stop that stops (within 250 ms), a dropped connection that is not a stop, the pause
 * at a parked approval (streams end at its marker), the AI SDK's approval responses answered in
 * band, regenerating the last answer, and a second message while a turn is in flight.
 *
 * @see docs/wire.md "Turns", "Resume", "Runs", "Approvals and grants"
 */
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StoreBlobs } from '../../src/agent/blobs.js';
import type { HostTool } from '../../src/agent/tools.js';
import type { Service } from '../../src/wire/create-service.js';
import type { ServiceOptions } from '../../src/wire/options.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { endlessModel, type ScriptedStep, scriptedModel, streamPartsOf } from './support/models.js';
import { connect, type Transport } from './support/transports.js';
import {
  assemble,
  type Caller,
  callerFor,
  eventually,
  type Frame,
  readTurn,
  readUntilPaused,
  resumeAfter,
  TurnReader,
  testService,
  textOf,
} from './support/wire.js';

/** The longest a stop may take to end the stream on the instance running the turn. */
const STOP_WITHIN_MS = 250;

const guarded = (name: string, run?: () => void): HostTool<Record<string, never>, unknown> => ({
  name,
  description: `Does ${name}`,
  input: z.object({}),
  risk: 'destructive',
  execute: async () => {
    run?.();
    return { done: name };
  },
});

let store: TestStore;
const services: Service[] = [];
const transports: Transport[] = [];
let users = 0;

beforeAll(async () => {
  store = await openTestStore();
});
afterAll(async () => {
  for (const t of transports) await t.close();
  for (const s of services) await s.close();
  await store?.dispose();
});

async function setup(options: Partial<ServiceOptions> & { steps?: ScriptedStep[] }) {
  const { steps, ...rest } = options;
  const scripted = steps ? scriptedModel(steps) : null;
  const service = await testService(store, { ...(scripted ? { model: scripted.model } : {}), ...rest });
  services.push(service);
  const transport = await connect('express', service);
  transports.push(transport);
  return { service, calls: scripted?.calls ?? [], call: callerFor(transport.fetch, `life-${++users}`) };
}

async function runOf(call: Caller, runId: string) {
  return (await (await call(`/runs/${runId}`)).json()).run;
}

/** Reads frames to the end, noting when each arrived. */
async function timedRest(reader: TurnReader): Promise<Array<Frame & { at: number }>> {
  const frames: Array<Frame & { at: number }> = [];
  for (let frame = await reader.next(); frame; frame = await reader.next())
    frames.push({ ...frame, at: Date.now() });
  return frames;
}

describe('stop that stops', () => {
  for (const via of ['run', 'thread'] as const) {
    it(`ends a streaming turn within ${STOP_WITHIN_MS} ms of POST /${via}s/:id/stop, keeping what was said`, async () => {
      const { call } = await setup({ model: endlessModel(20) });
      const response = await call('/chat', { method: 'POST', json: { message: 'talk forever' } });
      const runId = response.headers.get('x-service-run-id')!;
      const threadId = response.headers.get('x-service-thread-id')!;
      const reader = new TurnReader(response);
      await reader.until((f) => f.chunk.type === 'text-delta' && f.chunk.delta === 'w5 ');

      const stop = await call(via === 'run' ? `/runs/${runId}/stop` : `/threads/${threadId}/stop`, {
        method: 'POST',
        json: {},
      });
      const stoppedAt = Date.now();
      expect(stop.status).toBe(202);
      expect((await stop.json()).run).toMatchObject({ id: runId, threadId });
      const rest = await timedRest(reader);
      const ended = Date.now();

      expect(reader.done).toBe(true);
      for (const frame of rest) {
        if (frame.chunk.type === 'text-delta')
          expect(frame.at - stoppedAt).toBeLessThanOrEqual(STOP_WITHIN_MS);
      }
      expect(ended - stoppedAt).toBeLessThan(STOP_WITHIN_MS);
      expect(rest.slice(-2).map((f) => f.chunk.type)).toEqual(['abort', 'finish']);
      expect(rest.at(-1)!.chunk).toMatchObject({ messageMetadata: { runId, status: 'cancelled' } });
      // The stream has ended, so the run's record is written: cancelled, by the user.
      expect(await runOf(call, runId)).toMatchObject({ status: 'cancelled', stopReason: 'user' });

      const said = textOf(await assemble([...reader.frames].map((f) => f.chunk)));
      expect(said.startsWith('w0 w1 w2 w3 w4 w5 ')).toBe(true);
      const thread = (await (await call(`/threads/${threadId}`)).json()).thread;
      expect(thread.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
      expect(textOf(thread.messages[1])).toBe(said);
    });
  }

  it('stops a turn still reading its files, and the thread takes the next message', async () => {
    // A blob store whose reads never answer (a stalled bucket): the turn waits on the file.
    const stalled = new (class extends StoreBlobs {
      override get(): Promise<never> {
        return new Promise(() => {});
      }
    })(store.db);
    const { call } = await setup({ model: endlessModel(20), files: { blobs: stalled } });
    const uploaded = await call('/files', {
      method: 'POST',
      headers: { 'x-service-upload': 'raw', 'content-type': 'text/plain', 'x-service-file-name': 'a.txt' },
      body: 'some text',
    });
    const { file } = (await uploaded.json()) as { file: { id: string } };
    const response = await call('/chat', {
      method: 'POST',
      json: {
        id: 'stalled-files',
        message: {
          role: 'user',
          parts: [
            { type: 'text', text: 'read this' },
            { type: 'file', mediaType: 'text/plain', url: `/api/service/files/${file.id}/content` },
          ],
        },
      },
    });
    expect(response.status).toBe(200);
    const runId = response.headers.get('x-service-run-id')!;
    const reader = new TurnReader(response);
    const stop = await call('/threads/stalled-files/stop', { method: 'POST', json: {} });
    const stoppedAt = Date.now();
    expect(stop.status).toBe(202);
    await reader.rest();
    expect(Date.now() - stoppedAt).toBeLessThan(STOP_WITHIN_MS);
    expect([...reader.frames].map((f) => f.chunk.type)).toEqual(['start', 'abort', 'finish']);
    expect(await runOf(call, runId)).toMatchObject({ status: 'cancelled', stopReason: 'user' });
    const next = await call('/chat', { method: 'POST', json: { id: 'stalled-files', message: 'hello?' } });
    expect(next.status).toBe(200);
    await next.body?.cancel();
  });

  it('stops a thread idempotently, and answers 200 { run: null } when nothing is in flight', async () => {
    const { call } = await setup({ model: endlessModel(20) });
    const response = await call('/chat', { method: 'POST', json: { id: 'stop-twice', message: 'go' } });
    const reader = new TurnReader(response);
    await reader.until((f) => f.chunk.type === 'text-delta');
    const first = await call('/threads/stop-twice/stop', { method: 'POST', json: {} });
    expect(first.status).toBe(202);
    await reader.rest();
    const again = await call('/threads/stop-twice/stop', { method: 'POST', json: {} });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ run: null });
    const unknown = await call('/threads/no-such-thread/stop', { method: 'POST', json: {} });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe('not_found');
  });

  it('answers 200 { run: null } to a thread stop when the run it found ended before the stop landed', async () => {
    const { call, service } = await setup({ steps: [{ text: ['almost ', 'done'], chunkDelayMs: 30 }] });
    const response = await call('/chat', { method: 'POST', json: { id: 'stop-late', message: 'go' } });
    const runId = response.headers.get('x-service-run-id')!;
    const reader = new TurnReader(response);
    await reader.until((f) => f.chunk.type === 'text-delta');
    // The stop reads the run in flight, then the run completes before the stop is written.
    const runs = service.context.runs;
    const read = runs.inFlightRun.bind(runs);
    runs.inFlightRun = async (owner, threadId) => {
      const found = await read(owner, threadId);
      await reader.rest();
      await eventually(async () => ((await runOf(call, runId)).status === 'completed' ? true : undefined));
      return found;
    };
    const late = await call('/threads/stop-late/stop', { method: 'POST', json: {} });
    runs.inFlightRun = read;
    expect(late.status).toBe(200);
    expect(await late.json()).toEqual({ run: null });
    expect(await runOf(call, runId)).toMatchObject({ status: 'completed', stopReason: null });
  });

  it('lets a host tool that is running finish, and streams its result before the end', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let finished = false;
    const { call, calls } = await setup({
      steps: [{ toolCalls: [{ id: 'slow1', name: 'slow', input: {} }] }, { text: ['NEVER'] }],
      tools: [
        {
          name: 'slow',
          description: 'Takes a while',
          input: z.object({}),
          execute: async (_input, { signal }) => {
            started();
            await released;
            finished = !signal?.aborted;
            return { done: true };
          },
        },
      ],
    });
    const response = await call('/chat', { method: 'POST', json: { message: 'go' } });
    const runId = response.headers.get('x-service-run-id')!;
    const reader = new TurnReader(response);
    await running;
    await call(`/runs/${runId}/stop`, { method: 'POST', json: {} });
    setTimeout(release, 100);
    const frames = await reader.rest();
    expect(finished).toBe(true);
    expect(frames.slice(-3).map((f) => f.chunk)).toEqual([
      { type: 'tool-output-available', toolCallId: 'slow1', output: { done: true } },
      expect.objectContaining({ type: 'abort' }),
      expect.objectContaining({ type: 'finish' }),
    ]);
    expect(calls).toHaveLength(1);
    expect(await runOf(call, runId)).toMatchObject({ status: 'cancelled' });
  });

  it('treats an aborted request as a drop: the run goes on, and resumes whole', async () => {
    const words = Array.from({ length: 15 }, (_, i) => `d${i} `);
    // The model holds after its first words until the request is aborted: the stream cannot end
    // before the abort, however busy the machine.
    let release!: () => void;
    const aborted = new Promise<void>((resolve) => {
      release = resolve;
    });
    const parts = streamPartsOf({ text: words });
    const firstWords = parts.findIndex((part) => part.type === 'text-delta') + 1;
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          async start(controller) {
            for (const [i, part] of parts.entries()) {
              if (i === firstWords) await aborted;
              controller.enqueue(part);
              await new Promise((resolve) => setTimeout(resolve, 5));
            }
            controller.close();
          },
        }),
      }),
    });
    const { call } = await setup({ model });
    const abort = new AbortController();
    const response = await call('/chat', { method: 'POST', json: { message: 'go' }, signal: abort.signal });
    const runId = response.headers.get('x-service-run-id')!;
    const threadId = response.headers.get('x-service-thread-id')!;
    const reader = new TurnReader(response);
    await reader.until((f) => f.chunk.type === 'text-delta');
    abort.abort();
    await expect(reader.rest()).rejects.toThrow();
    const seen = reader.frames;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await runOf(call, runId)).status).toBe('running');
    release();
    const rest = await resumeAfter(call, threadId, seen.at(-1)!.id);
    const all = [...seen, ...rest];
    expect(all.map((f) => f.id)).toEqual(all.map((_, i) => i + 1));
    expect(textOf(await assemble(all.map((f) => f.chunk)))).toBe(words.join(''));
    expect(await runOf(call, runId)).toMatchObject({ status: 'completed', stopReason: null });
  });
});

describe('the pause at a parked approval', () => {
  it('ends every reader at the marker while the run waits, and goes past an old marker once decided', async () => {
    const { call } = await setup({
      steps: [{ text: ['Sure.'], toolCalls: [{ id: 'p1', name: 'rm', input: {} }] }, { text: ['Removed.'] }],
      tools: [guarded('rm')],
    });
    const response = await call('/chat', { method: 'POST', json: { id: 'pause-1', message: 'rm' } });
    const paused = await readUntilPaused(new TurnReader(response));
    const markers = paused.frames.filter((f) => f.chunk.type === 'message-metadata');
    expect(markers).toHaveLength(1);

    // A replay from the start (useChat's resumeStream) ends at the same place.
    const replay = await readUntilPaused(new TurnReader(await call('/threads/pause-1/stream')));
    expect(replay.frames.map((f) => f.chunk)).toEqual(paused.frames.map((f) => f.chunk));
    // A reader resuming after the marker is not ended by it: it waits for what comes next.
    const waiting = new TurnReader(await call(`/threads/pause-1/stream?after=${paused.resumeAfter}`));
    const next = waiting.next();

    await call(`/approvals/${paused.approvalIds[0]}/decide`, {
      method: 'POST',
      json: { decision: 'approve' },
    });
    expect((await next)?.chunk).toMatchObject({ type: 'tool-output-available', toolCallId: 'p1' });
    const rest = await waiting.rest();
    expect(rest.at(-1)!.chunk.type).toBe('finish');
    // Once decided, a replay passes the old marker and reads on to the end.
    const whole = await readTurn(await call('/threads/pause-1/stream?after=0'));
    expect(whole.chunks.at(-1)!.type).toBe('finish');
    expect(textOf(whole.message)).toBe('Sure.Removed.');
  });

  it('pauses once the model has finished the step, after all of its text', async () => {
    // The call comes first, then more text: the pause waits for the step to end.
    const parts: LanguageModelV3StreamPart[] = [
      { type: 'stream-start', warnings: [] },
      { type: 'tool-call', toolCallId: 'late1', toolName: 'rm', input: '{}' },
      { type: 'text-start', id: 't' },
      ...['one ', 'two ', 'three'].map((delta) => ({ type: 'text-delta' as const, id: 't', delta })),
      { type: 'text-end', id: 't' },
      {
        type: 'finish',
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage: {
          inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 1, text: 1, reasoning: undefined },
        },
      },
    ];
    let step = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: simulateReadableStream({
          chunks: step++ === 0 ? parts : streamPartsOf({ text: ['ok'] }),
          initialDelayInMs: null,
          chunkDelayInMs: 30,
        }),
      }),
    });
    const { call } = await setup({ model, tools: [guarded('rm')] });
    const paused = await readUntilPaused(
      new TurnReader(await call('/chat', { method: 'POST', json: { message: 'rm' } })),
    );
    const types = paused.frames.map((f) => f.chunk.type);
    expect(types.lastIndexOf('text-delta')).toBeLessThan(types.indexOf('tool-approval-request'));
    expect(types.at(-1)).toBe('message-metadata');
  });

  it('pauses again while a second parked call still waits, after the first one ran', async () => {
    const ran: string[] = [];
    const { call } = await setup({
      steps: [
        {
          toolCalls: [
            { id: 'a1', name: 'first', input: {} },
            { id: 'b1', name: 'second', input: {} },
          ],
        },
        { text: ['Both handled.'] },
      ],
      tools: [guarded('first', () => ran.push('first')), guarded('second', () => ran.push('second'))],
    });
    const response = await call('/chat', { method: 'POST', json: { id: 'two-parked', message: 'both' } });
    const paused = await readUntilPaused(new TurnReader(response));
    expect(paused.approvalIds).toHaveLength(2);
    expect(paused.frames.filter((f) => f.chunk.type === 'message-metadata')).toHaveLength(1);
    const [first, second] = paused.approvalIds as [string, string];
    const firstCall = (await (await call(`/approvals/${first}`)).json()).approval.request.toolCallId;
    await call(`/approvals/${first}/decide`, { method: 'POST', json: { decision: 'approve' } });

    const again = await readUntilPaused(
      new TurnReader(await call(`/threads/two-parked/stream?after=${paused.resumeAfter}`)),
    );
    expect(again.frames.map((f) => f.chunk)).toEqual([
      { type: 'tool-output-available', toolCallId: firstCall, output: expect.any(Object) },
      expect.objectContaining({ type: 'message-metadata' }),
    ]);
    await call(`/approvals/${second}/decide`, { method: 'POST', json: { decision: 'deny' } });
    const rest = await resumeAfter(call, 'two-parked', again.resumeAfter);
    expect(rest.some((f) => f.chunk.type === 'tool-output-denied')).toBe(true);
    expect(rest.at(-1)!.chunk.type).toBe('finish');
    expect(ran).toHaveLength(1);
  });

  it('resumes by itself when the approval expires, and a reader that resumes sees the rest', async () => {
    const { call } = await setup({
      steps: [{ toolCalls: [{ id: 'e1', name: 'rm', input: {} }] }, { text: ['Nobody answered.'] }],
      tools: [guarded('rm')],
      approvalTtlMs: 300,
    });
    const response = await call('/chat', { method: 'POST', json: { id: 'expiring', message: 'rm' } });
    const runId = response.headers.get('x-service-run-id')!;
    const paused = await readUntilPaused(new TurnReader(response));
    await eventually(async () => ((await runOf(call, runId)).status === 'completed' ? true : undefined));
    const rest = await resumeAfter(call, 'expiring', paused.resumeAfter);
    expect(rest[0]!.chunk).toEqual({
      type: 'tool-output-error',
      toolCallId: 'e1',
      errorText: 'The approval expired.',
    });
    expect(textOf(await assemble([...paused.frames, ...rest].map((f) => f.chunk)))).toBe('Nobody answered.');
  });
});

describe('approval responses in band (the AI SDK resend)', () => {
  /** A turn parked on `rm`, as the client holds it when its stream ended at the pause. */
  async function parked(options: Partial<ServiceOptions> = {}) {
    let removed = 0;
    const env = await setup({
      steps: [{ toolCalls: [{ id: 'r1', name: 'rm', input: {} }] }, { text: ['Handled.'] }],
      tools: [guarded('rm', () => removed++)],
      ...options,
    });
    const threadId = `inband-${users}`;
    const response = await env.call('/chat', { method: 'POST', json: { id: threadId, message: 'rm' } });
    const runId = response.headers.get('x-service-run-id')!;
    const paused = await readUntilPaused(new TurnReader(response));
    const message = await assemble(paused.frames.map((f) => f.chunk));
    return { ...env, threadId, runId, paused, message: message!, removed: () => removed };
  }

  /** The client's message with its call answered, as `addToolApprovalResponse` leaves it. */
  function answered(message: Awaited<ReturnType<typeof parked>>['message'], approved: boolean) {
    return {
      ...message,
      parts: message.parts.map((p) =>
        p.type === 'tool-rm' && p.state === 'approval-requested'
          ? { ...p, state: 'approval-responded', approval: { ...p.approval, approved } }
          : p,
      ),
    };
  }

  function resend(call: Caller, threadId: string, last: unknown) {
    return call('/chat', {
      method: 'POST',
      json: {
        id: threadId,
        trigger: 'submit-message',
        messageId: (last as { id?: string }).id,
        messages: [last],
      },
    });
  }

  it('decides the answered approvals and streams the run on from the pause', async () => {
    const turn = await parked();
    const response = await resend(turn.call, turn.threadId, answered(turn.message, true));
    expect(response.status).toBe(200);
    expect(response.headers.get('x-service-run-id')).toBe(turn.runId);
    const rest = await new TurnReader(response).rest();
    expect(rest[0]!.id).toBe(turn.paused.resumeAfter + 1);
    expect(rest[0]!.chunk).toMatchObject({ type: 'tool-output-available', toolCallId: 'r1' });
    expect(rest.at(-1)!.chunk.type).toBe('finish');
    expect(turn.removed()).toBe(1);
    const approval = (await (await turn.call(`/approvals/${turn.paused.approvalIds[0]}`)).json()).approval;
    expect(approval.status).toBe('executed');
    const activity = (await (await turn.call('/activity')).json()).events;
    expect(activity.filter((e: { kind: string }) => e.kind === 'approval.decided')).toHaveLength(1);
  });

  it('records a denial and streams the call as denied', async () => {
    const turn = await parked();
    const rest = await new TurnReader(
      await resend(turn.call, turn.threadId, answered(turn.message, false)),
    ).rest();
    expect(rest[0]!.chunk).toEqual({ type: 'tool-output-denied', toolCallId: 'r1' });
    expect(turn.removed()).toBe(0);
    const approval = (await (await turn.call(`/approvals/${turn.paused.approvalIds[0]}`)).json()).approval;
    expect(approval.status).toBe('declined');
  });

  it('accepts an approval the API already decided the same way, or the other way, and shows what happened', async () => {
    const same = await parked();
    await same.call(`/approvals/${same.paused.approvalIds[0]}/decide`, {
      method: 'POST',
      json: { decision: 'approve', remember: true },
    });
    const sameRest = await new TurnReader(
      await resend(same.call, same.threadId, answered(same.message, true)),
    ).rest();
    expect(sameRest[0]!.chunk).toMatchObject({ type: 'tool-output-available', toolCallId: 'r1' });
    expect(same.removed()).toBe(1);

    const other = await parked();
    await other.call(`/approvals/${other.paused.approvalIds[0]}/decide`, {
      method: 'POST',
      json: { decision: 'deny' },
    });
    const response = await resend(other.call, other.threadId, answered(other.message, true));
    expect(response.status).toBe(200);
    const otherRest = await new TurnReader(response).rest();
    expect(otherRest[0]!.chunk).toEqual({ type: 'tool-output-denied', toolCallId: 'r1' });
    expect(other.removed()).toBe(0);
  });

  it('falls back to where the run was when resumeAfter is missing, foreign or out of range', async () => {
    const cursors = [
      () => undefined,
      (runId: string) => ({ runId, resumeAfter: 'x' }),
      () => ({ runId: 'run_other', resumeAfter: 1 }),
      (runId: string) => ({ runId, resumeAfter: 10_000 }),
    ];
    for (const metadataOf of cursors) {
      const turn = await parked();
      const last = { ...answered(turn.message, true), metadata: metadataOf(turn.runId) };
      const rest = await new TurnReader(await resend(turn.call, turn.threadId, last)).rest();
      expect(rest[0]!.id).toBe(turn.paused.resumeAfter + 1);
    }
  });

  it('refuses garbage with a 400 naming the field, and unknown approvals or another thread’s with a 404', async () => {
    const turn = await parked();
    const bad = answered(turn.message, true);
    const part = bad.parts.findIndex((p) => p.type === 'tool-rm');
    const garbage = structuredClone(bad) as { parts: Array<Record<string, unknown>> };
    garbage.parts[part]!.approval = { id: 5, approved: 'yes' };
    const refused = await resend(turn.call, turn.threadId, garbage);
    expect(refused.status).toBe(400);
    const error = (await refused.json()).error;
    expect(error.code).toBe('validation_failed');
    expect(error.message).toContain(`body.messages[-1].parts.${part}.approval`);

    const noAnswers = await resend(turn.call, turn.threadId, turn.message);
    expect(noAnswers.status).toBe(400);
    expect((await noAnswers.json()).error.message).toContain('approval-responded');

    const noThread = await turn.call('/chat', { method: 'POST', json: { messages: [bad] } });
    expect(noThread.status).toBe(400);
    expect((await noThread.json()).error.message).toContain('body.id');

    const forged = structuredClone(bad) as { parts: Array<Record<string, unknown>> };
    forged.parts[part]!.approval = { id: 'apr_forged', approved: true };
    const unknown = await resend(turn.call, turn.threadId, forged);
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe('not_found');

    // The user's own approval, answered on another of their threads: not that thread's to decide.
    const other = `${turn.threadId}-other`;
    await readTurn(await turn.call('/chat', { method: 'POST', json: { id: other, message: 'hi' } }));
    const elsewhere = await resend(turn.call, other, bad);
    expect(elsewhere.status).toBe(404);
    expect((await elsewhere.json()).error.message).toContain(`No such approval on thread ${other}`);
    expect(turn.removed()).toBe(0);
    // Nothing was decided by the refused requests.
    const approval = (await (await turn.call(`/approvals/${turn.paused.approvalIds[0]}`)).json()).approval;
    expect(approval.status).toBe('pending');
  });
});

describe('one turn at a time', () => {
  it('refuses a message while a turn runs with 409 run_in_flight naming the run and what to do', async () => {
    const { call } = await setup({ model: endlessModel(20) });
    const first = await call('/chat', { method: 'POST', json: { id: 'busy-1', message: 'one' } });
    const runId = first.headers.get('x-service-run-id')!;
    const second = await call('/chat', { method: 'POST', json: { id: 'busy-1', message: 'two' } });
    expect(second.status).toBe(409);
    expect(second.headers.get('service-error-code')).toBe('run_in_flight');
    const { error } = await second.json();
    expect(error).toEqual({
      code: 'run_in_flight',
      run_id: runId,
      message: `This thread already has a turn in flight (${runId}): resume its stream with GET /threads/busy-1/stream, or stop it with POST /threads/busy-1/stop, then send again.`,
    });
    await call('/threads/busy-1/stop', { method: 'POST', json: {} });
    await readTurn(first);
  });

  it('counts a turn paused for approval as in flight, and says to answer it', async () => {
    const { call } = await setup({
      steps: [{ toolCalls: [{ id: 'q1', name: 'rm', input: {} }] }],
      tools: [guarded('rm')],
    });
    const first = await call('/chat', { method: 'POST', json: { id: 'busy-2', message: 'rm' } });
    const runId = first.headers.get('x-service-run-id')!;
    await readUntilPaused(new TurnReader(first));
    const second = await call('/chat', { method: 'POST', json: { id: 'busy-2', message: 'two' } });
    expect(second.status).toBe(409);
    const { error } = await second.json();
    expect(error.run_id).toBe(runId);
    expect(error.message).toContain('is waiting for an approval');
    expect(error.message).toContain('POST /threads/busy-2/stop');
  });
});

describe('regenerate', () => {
  const regenerate = (call: Caller, id: string, messageId?: string) =>
    call('/chat', {
      method: 'POST',
      json: {
        id,
        trigger: 'regenerate-message',
        ...(messageId ? { messageId } : {}),
        messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'ignored' }] }],
      },
    });

  it('replaces the last answer with a new one on the same history', async () => {
    const { call, calls } = await setup({ steps: [{ text: ['First.'] }, { text: ['Second.'] }] });
    const first = await readTurn(
      await call('/chat', { method: 'POST', json: { id: 'regen-1', message: 'Hi' } }),
    );
    const answer = first.message!.id;
    const again = await regenerate(call, 'regen-1', answer);
    expect(again.status).toBe(200);
    const turn = await readTurn(again);
    expect(textOf(turn.message)).toBe('Second.');
    expect(turn.message!.id).not.toBe(answer);
    const thread = (await (await call('/threads/regen-1')).json()).thread;
    expect(thread.messages.map((m: { id: string }) => m.id)).toEqual([
      thread.messages[0].id,
      turn.message!.id,
    ]);
    expect(JSON.stringify(calls[1]!.prompt)).not.toContain('First.');
    expect(JSON.stringify(calls[1]!.prompt)).not.toContain('ignored');
  });

  it('refuses all but the last answer, an unknown thread, and a turn in flight', async () => {
    const { call } = await setup({
      steps: [{ text: ['A.'] }, { text: ['B.'] }, { text: ['x', 'y'], chunkDelayMs: 200 }],
    });
    const one = await readTurn(
      await call('/chat', { method: 'POST', json: { id: 'regen-2', message: 'one' } }),
    );
    await readTurn(await call('/chat', { method: 'POST', json: { id: 'regen-2', message: 'two' } }));
    const stale = await regenerate(call, 'regen-2', one.message!.id);
    expect(stale.status).toBe(409);
    const error = (await stale.json()).error;
    expect(error.code).toBe('regenerate_not_last');
    expect(error.message).toContain(one.message!.id);

    const unknown = await regenerate(call, 'regen-none');
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe('not_found');

    const running = await call('/chat', { method: 'POST', json: { id: 'regen-2', message: 'three' } });
    const busy = await regenerate(call, 'regen-2');
    expect(busy.status).toBe(409);
    expect((await busy.json()).error.code).toBe('run_in_flight');
    await readTurn(running);
    // Nothing was removed by the refusals: six messages, three answers.
    const thread = (await (await call('/threads/regen-2')).json()).thread;
    expect(thread.messages).toHaveLength(6);
  });

  it('answers the last user message again when the thread ends with it (a failed turn)', async () => {
    const { call } = await setup({
      steps: [
        { error: new Error('down') },
        { text: ['Back.'] },
        { error: new Error('down') },
        { text: ['Again.'] },
      ],
    });
    await readTurn(await call('/chat', { method: 'POST', json: { id: 'regen-3', message: 'hello' } }));
    const retried = await readTurn(await regenerate(call, 'regen-3'));
    expect(textOf(retried.message)).toBe('Back.');
    const thread = (await (await call('/threads/regen-3')).json()).thread;
    expect(thread.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    // Named by its id, as useChat's regenerate({ messageId }) of a user message sends it.
    await readTurn(await call('/chat', { method: 'POST', json: { id: 'regen-3', message: 'more' } }));
    const more = (await (await call('/threads/regen-3')).json()).thread.messages.at(-1);
    expect(more.role).toBe('user');
    const named = await readTurn(await regenerate(call, 'regen-3', more.id));
    expect(textOf(named.message)).toBe('Again.');
  });
});
