/**
 * A turn outlives a blink of its embedded store: the thread the store runs on stops (as a
 * WebAssembly abort ends it) while a turn streams, and starts again on its folder a second later.
 * The turn streams on from memory; once the store is back, what it wrote meanwhile (its chunks,
 * its answer, its end) reaches the store too: a resume on another instance reads the whole turn,
 * each chunk once, and the thread has its answer and takes the next turn. A call parked for its
 * approval waits on across the blink, a reader following the run from another instance reads
 * on across it, and a webhook delivery the blink cut is started by the sender's retry.
 *
 * @see docs/wire.md "Resume", "Approvals and grants", "POST /webhooks/:source"; docs/storage.md "The embedded store"
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { ApprovalStore } from '../../src/agent/approvals.js';
import { signWebhook } from '../../src/automations/webhooks.js';
import { StoreUnavailableError } from '../../src/store/availability.js';
import { createStore, type Store } from '../../src/store/index.js';
import type { Service } from '../../src/wire/create-service.js';
import { engineThreads } from '../support/engine-threads.js';
import { makeDataFolder } from '../support/stores.js';
import { lastUserText, reactiveModel } from './support/models.js';
import {
  assemble,
  callerFor,
  readUntilPaused,
  resumeAfter,
  TurnReader,
  testService,
  textOf,
} from './support/wire.js';

const HOOKS_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

vi.mock('node:worker_threads', async (original) =>
  (await import('../support/engine-threads.js')).recordingWorkers(await original()),
);

describe('the embedded store’s thread stops while a turn streams', () => {
  let folder: string;
  let store: Store;
  /** The instance running the turn, and another one on the same store. */
  let one: Service;
  let two: Service;
  const deleted: string[] = [];

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'svc-wire-restart-'));
    // A migrated folder from the suite's image: creating one (initdb) costs seconds of CPU, and
    // this is about what happens once the store runs on it.
    await makeDataFolder(join(folder, 'data'));
    store = await createStore({ dataDir: join(folder, 'data'), url: '' });
    expect(store.embedded).toBe('thread');
    // A turn answers 150 words, one every 20 ms (it streams for 3 s, across the store's restart);
    // one asked to delete calls a tool that waits for an approval, then says it is done.
    const model = reactiveModel((options) => {
      if (options.prompt.at(-1)?.role === 'tool') return { text: ['Deleted.'] };
      if (lastUserText(options).includes('delete'))
        return { toolCalls: [{ id: 'd1', name: 'delete_file', input: { path: '/tmp/a' } }] };
      return { text: Array.from({ length: 150 }, (_, i) => `w${i} `), chunkDelayMs: 20 };
    });
    const tools = [
      {
        name: 'delete_file',
        description: 'Deletes a file',
        input: z.object({ path: z.string() }),
        risk: 'destructive' as const,
        execute: async ({ path }: { path: string }) => {
          deleted.push(path);
          return { deleted: path };
        },
      },
    ];
    one = await testService(store, { model, tools, automations: { webhooks: { hooks: HOOKS_SECRET } } });
    two = await testService(store, { model, tools });
  }, 60_000);
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await store?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('streams on, and stores every chunk once the store is back', async () => {
    const response = await callerFor(one.fetch, 'ada')('/chat', {
      method: 'POST',
      json: { id: 'blink', message: 'talk' },
    });
    expect(response.status).toBe(200);
    const runId = response.headers.get('x-service-run-id')!;
    const reader = new TurnReader(response);
    await reader.until((frame) => frame.chunk.type === 'text-delta' && frame.chunk.delta === 'w10 ');
    await engineThreads.at(-1)!.terminate();

    // The reader here gets the whole turn from memory.
    const live = await reader.rest();
    expect(reader.done).toBe(true);
    expect(live.at(-1)!.chunk).toMatchObject({ type: 'finish', messageMetadata: { status: 'completed' } });
    expect(live.map((frame) => frame.id)).toEqual(live.map((_, i) => i + 1));

    // Another instance reads the run from the store: every chunk, each once, then [DONE].
    await vi.waitFor(async () => expect(await store.ping()).toBe(true), { timeout: 20_000, interval: 50 });
    const resumed = await callerFor(two.fetch, 'ada')(`/runs/${runId}/stream`, {
      headers: { 'last-event-id': '0' },
    });
    expect(resumed.status).toBe(200);
    const elsewhere = new TurnReader(resumed);
    const frames = await elsewhere.rest();
    expect(elsewhere.done).toBe(true);
    expect(frames).toEqual(live);

    // The thread has its answer, its run ended as it did, and it takes the next turn.
    const { thread } = await (await callerFor(two.fetch, 'ada')('/threads/blink')).json();
    expect(thread.messages.map((message: { role: string }) => message.role)).toEqual(['user', 'assistant']);
    expect(thread.latestRun).toMatchObject({ id: runId, status: 'completed' });
    const next = await callerFor(two.fetch, 'ada')('/chat', {
      method: 'POST',
      json: { id: 'blink', message: 'and again' },
    });
    expect(next.status).toBe(200);
    await new TurnReader(next).rest();
  }, 30_000);

  it('keeps a call waiting for its approval across the restart, and runs it once approved', async () => {
    const call = callerFor(one.fetch, 'ada');
    const response = await call('/chat', {
      method: 'POST',
      json: { id: 'parked', message: 'delete /tmp/a' },
    });
    const runId = response.headers.get('x-service-run-id')!;
    const paused = await readUntilPaused(new TurnReader(response));
    const [approvalId] = paused.approvalIds;

    // The run polls its approval while the thread is down, and after it starts again.
    await engineThreads.at(-1)!.terminate();
    await vi.waitFor(async () => expect(await store.ping()).toBe(true), { timeout: 20_000, interval: 50 });
    expect((await (await call(`/runs/${runId}`)).json()).run.status).toBe('awaiting_approval');
    const decided = await call(`/approvals/${approvalId}/decide`, {
      method: 'POST',
      json: { decision: 'approve' },
    });
    expect(decided.status).toBe(200);
    const rest = await resumeAfter(call, 'parked', paused.resumeAfter);
    const message = await assemble([...paused.frames, ...rest].map((frame) => frame.chunk));
    expect(message?.parts.find((part) => part.type === 'tool-delete_file')).toMatchObject({
      state: 'output-available',
      output: { deleted: '/tmp/a' },
    });
    expect(textOf(message)).toBe('Deleted.');
    expect(deleted).toEqual(['/tmp/a']);
    expect((await (await call(`/runs/${runId}`)).json()).run.status).toBe('completed');
  }, 30_000);

  it('ends a live reader at the pause when the store cannot say whether the approval still waits', async () => {
    // Asked at the pause marker, the store is away: no instance can record a decision meanwhile,
    // so the run's own pause stands and the reader ends there, as it would have.
    const asked = vi
      .spyOn(ApprovalStore.prototype, 'hasPending')
      .mockRejectedValue(new StoreUnavailableError());
    const deletedBefore = deleted.length;
    try {
      const call = callerFor(one.fetch, 'ada');
      const response = await call('/chat', {
        method: 'POST',
        json: { id: 'asked-away', message: 'delete /tmp/a' },
      });
      const paused = await readUntilPaused(new TurnReader(response));
      expect(asked).toHaveBeenCalled();
      asked.mockRestore();
      const decided = await call(`/approvals/${paused.approvalIds[0]}/decide`, {
        method: 'POST',
        json: { decision: 'approve' },
      });
      expect(decided.status).toBe(200);
      const rest = await resumeAfter(call, 'asked-away', paused.resumeAfter);
      const message = await assemble([...paused.frames, ...rest].map((frame) => frame.chunk));
      expect(textOf(message)).toBe('Deleted.');
      expect(deleted.length).toBe(deletedBefore + 1);
    } finally {
      asked.mockRestore();
    }
  }, 30_000);

  it('keeps a resume on another instance reading across the restart, to the turn’s end', async () => {
    const response = await callerFor(one.fetch, 'ada')('/chat', {
      method: 'POST',
      json: { id: 'followed', message: 'talk' },
    });
    const runId = response.headers.get('x-service-run-id')!;
    const here = new TurnReader(response);
    await here.until((frame) => frame.chunk.type === 'text-delta' && frame.chunk.delta === 'w5 ');
    // Another instance follows the run from the store, polling it.
    const resumed = await callerFor(two.fetch, 'ada')(`/runs/${runId}/stream`, {
      headers: { 'last-event-id': '0' },
    });
    const elsewhere = new TurnReader(resumed);
    await elsewhere.until((frame) => frame.chunk.type === 'text-delta' && frame.chunk.delta === 'w5 ');
    await engineThreads.at(-1)!.terminate();

    // Both read on (a stream is read from the store only as its client reads): the follower
    // waits out the restart instead of failing its stream, and reads on to [DONE].
    const [live, frames] = await Promise.all([here.rest(), elsewhere.rest()]);
    expect(elsewhere.done).toBe(true);
    expect(frames).toEqual(live);
  }, 30_000);

  it('forgets a delivery the stop cut before its runs started, so the sender’s retry starts them', async () => {
    const created = await callerFor(one.fetch, 'ada')('/automations', {
      method: 'POST',
      json: { name: 'on hooks', prompt: 'Triage this event', trigger: { type: 'webhook', source: 'hooks' } },
    });
    expect(created.status).toBe(201);
    const deliver = () => {
      const at = Math.floor(Date.now() / 1000);
      return callerFor(one.fetch, null)('/webhooks/hooks', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': 'msg_cut',
          'webhook-timestamp': String(at),
          'webhook-signature': signWebhook(HOOKS_SECRET, 'msg_cut', at, new TextEncoder().encode('{}')),
        },
        body: '{}',
      });
    };
    // The thread stops once the delivery's id is remembered, before its runs start.
    const records = one.context.automations!.records;
    const forSource = records.forSource.bind(records);
    records.forSource = async (source) => {
      records.forSource = forSource;
      await engineThreads.at(-1)!.terminate();
      return forSource(source);
    };
    const cut = await deliver();
    expect(cut.status).toBe(503);
    await vi.waitFor(async () => expect(await store.ping()).toBe(true), { timeout: 20_000, interval: 50 });

    // The sender retries as told, once the store is back and its Retry-After has passed: the
    // delivery is taken afresh, not answered as a duplicate (which would lose it).
    await new Promise((resolve) => setTimeout(resolve, Number(cut.headers.get('retry-after')) * 1000));
    const retried = await deliver();
    expect(retried.status).toBe(202);
    expect(await retried.json()).toMatchObject({
      accepted: true,
      duplicate: false,
      runs: [expect.any(String)],
    });
  }, 30_000);
});
