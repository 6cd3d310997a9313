/**
 * Several instances on one store (each service is an instance: its own live runs, timers and
 * memory): a turn resumed, stopped or approved through another instance, abandoned when nobody
 * reads it, and taken over when its instance died.
 *
 * @see docs/wire.md "Resume", "Runs"
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Store } from '../../src/store/index.js';
import type { Service } from '../../src/wire/create-service.js';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { scriptedModel } from './support/models.js';
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

for (const kind of STORE_KINDS) {
  describe(`wire instances (${kind})`, () => {
    let store: TestStore;
    let secondStore: Store;
    const services: Service[] = [];

    beforeAll(async () => {
      store = await openTestStore(kind);
      // On Postgres the second instance has its own connection pool, as a second process would.
      secondStore = kind === 'postgres' ? await openSecondHandle(store) : store;
    });
    afterAll(async () => {
      for (const service of services) await service.close();
      if (secondStore !== store) await secondStore.close();
      await store?.dispose();
    });

    const instance = async (s: Store, options: Parameters<typeof testService>[1]) => {
      const service = await testService(s, options);
      services.push(service);
      return service;
    };

    it('resumes on another instance exactly where the reader left off', async () => {
      const words = Array.from({ length: 10 }, (_, i) => `x${i} `);
      const a = await instance(store, { model: scriptedModel([{ text: words, chunkDelayMs: 40 }]).model });
      const b = await instance(secondStore, {});
      const response = await callerFor(a.fetch, 'ivy')('/chat', { method: 'POST', json: { message: 'go' } });
      const threadId = response.headers.get('x-service-thread-id')!;
      const first = new TurnReader(response);
      await first.until((f) => f.chunk.type === 'text-delta');
      await first.drop();
      const seen = first.frames;
      // Give the write-behind a moment, then read the rest through the other instance.
      const resumed = await callerFor(b.fetch, 'ivy')(`/threads/${threadId}/stream`, {
        headers: { 'last-event-id': String(seen.at(-1)!.id) },
      });
      const rest = await new TurnReader(resumed).rest();
      const ids = [...seen, ...rest].map((f) => f.id);
      expect(ids).toEqual(ids.map((_, i) => i + 1));
      expect(textOf(await assemble([...seen, ...rest].map((f) => f.chunk)))).toBe(words.join(''));
    });

    it('stops a run from another instance', async () => {
      const a = await instance(store, {
        model: scriptedModel([{ text: Array(30).fill('y '), chunkDelayMs: 30 }]).model,
      });
      const b = await instance(secondStore, {});
      const response = await callerFor(a.fetch, 'jay')('/chat', { method: 'POST', json: { message: 'go' } });
      const runId = response.headers.get('x-service-run-id')!;
      const reader = new TurnReader(response);
      await reader.until((f) => f.chunk.type === 'text-delta');
      const stopped = await callerFor(b.fetch, 'jay')(`/runs/${runId}/stop`, { method: 'POST', json: {} });
      expect(stopped.status).toBe(202);
      await reader.rest();
      const run = await eventually(async () => {
        const r = (await (await callerFor(b.fetch, 'jay')(`/runs/${runId}`)).json()).run;
        return r.status === 'cancelled' ? r : undefined;
      });
      expect(run.stopReason).toBe('user');
    });

    const rebooting = () =>
      instance(store, {
        model: scriptedModel([
          { toolCalls: [{ id: 'r1', name: 'reboot', input: {} }] },
          { text: ['Rebooted.'] },
        ]).model,
        tools: [
          {
            name: 'reboot',
            description: 'Reboots',
            input: z.object({}),
            risk: 'destructive',
            execute: () => 'ok',
          },
        ],
      });

    it('runs a parked call approved on another instance, and pauses readers there too', async () => {
      const a = await rebooting();
      const b = await instance(secondStore, {});
      const response = await callerFor(a.fetch, 'kim')('/chat', {
        method: 'POST',
        json: { id: 'reboot-1', message: 'reboot' },
      });
      const paused = await readUntilPaused(new TurnReader(response));
      // A reader on the other instance (from the store) ends at the same pause.
      const elsewhere = await readUntilPaused(
        new TurnReader(await callerFor(b.fetch, 'kim')('/threads/reboot-1/stream')),
      );
      expect(elsewhere.frames.map((f) => f.chunk)).toEqual(paused.frames.map((f) => f.chunk));
      await callerFor(b.fetch, 'kim')(`/approvals/${paused.approvalIds[0]}/decide`, {
        method: 'POST',
        json: { decision: 'approve' },
      });
      const rest = await resumeAfter(callerFor(b.fetch, 'kim'), 'reboot-1', paused.resumeAfter);
      const message = await assemble([...paused.frames, ...rest].map((f) => f.chunk));
      expect(textOf(message)).toBe('Rebooted.');
    });

    it('takes the AI SDK’s approval responses on another instance and streams the rest from there', async () => {
      const a = await rebooting();
      const b = await instance(secondStore, {});
      const response = await callerFor(a.fetch, 'kit')('/chat', {
        method: 'POST',
        json: { id: 'reboot-2', message: 'reboot' },
      });
      const paused = await readUntilPaused(new TurnReader(response));
      const message = (await assemble(paused.frames.map((f) => f.chunk)))!;
      const last = {
        ...message,
        parts: message.parts.map((p) =>
          p.type === 'tool-reboot'
            ? { ...p, state: 'approval-responded', approval: { ...p.approval, approved: true } }
            : p,
        ),
      };
      const resent = await callerFor(b.fetch, 'kit')('/chat', {
        method: 'POST',
        json: { id: 'reboot-2', trigger: 'submit-message', messageId: message.id, messages: [last] },
      });
      const rest = await new TurnReader(resent).rest();
      expect(rest[0]!.id).toBe(paused.resumeAfter + 1);
      expect(textOf(await assemble([...paused.frames, ...rest].map((f) => f.chunk)))).toBe('Rebooted.');
    });

    it('cancels a run nobody reads within the resume window, as abandoned', async () => {
      const a = await instance(store, {
        resumeWindowMs: 200,
        model: scriptedModel([{ text: Array(60).fill('z '), chunkDelayMs: 30 }]).model,
      });
      const response = await callerFor(a.fetch, 'lee')('/chat', { method: 'POST', json: { message: 'go' } });
      const runId = response.headers.get('x-service-run-id')!;
      const reader = new TurnReader(response);
      await reader.until((f) => f.chunk.type === 'text-delta');
      await reader.drop();
      const run = await eventually(async () => {
        const r = (await (await callerFor(a.fetch, 'lee')(`/runs/${runId}`)).json()).run;
        return r.status === 'cancelled' ? r : undefined;
      }, 8000);
      expect(run.stopReason).toBe('abandoned');
    });

    it('takes over a thread whose run was left in flight by an instance that died', async () => {
      const a = await instance(store, { model: scriptedModel([{ text: ['fresh'] }]).model });
      const call = callerFor(a.fetch, 'max');
      await readTurn(await call('/chat', { method: 'POST', json: { id: 'orphan', message: 'one' } }));
      // A run left `running` by a dead instance: its row stopped being touched a minute ago.
      await sql`insert into wire_runs (id, owner, thread_id, status, updated_at)
        values ('run_dead', 'max', 'orphan', 'awaiting_approval', now() - interval '1 minute')`.execute(
        store.db,
      );
      await sql`insert into wire_approvals (id, owner, run_id, thread_id, tool_call_id, tool, input, status, expires_at)
        values ('apr_dead', 'max', 'run_dead', 'orphan', 'c1', 'reboot', '{}'::jsonb, 'pending',
          now() + interval '1 hour')`.execute(store.db);
      const turn = await readTurn(
        await call('/chat', { method: 'POST', json: { id: 'orphan', message: 'two' } }),
      );
      expect(textOf(turn.message)).toBe('fresh');
      const dead = (await (await call('/runs/run_dead')).json()).run;
      expect(dead).toMatchObject({ status: 'failed', error: { code: 'instance_lost' } });
      // Its parked call can no longer be approved into a grant for a call nothing runs.
      expect((await (await call('/approvals/apr_dead')).json()).approval.status).toBe('dropped');
    });

    it('ends what a dead instance left in flight: swept as instance_lost with its approvals dropped, a stop cancels one, its readers end', async () => {
      const a = await instance(store, {});
      const call = callerFor(a.fetch, 'oli');
      // What an instance killed mid-turn leaves: rows untouched for a minute, a parked approval
      // (one decided after the kill, which nothing will run), a stream in flight.
      const orphan = async (thread: string, status: string, approval: string | null) => {
        const run = `run_${thread}`;
        await sql`insert into wire_threads (owner, id) values ('oli', ${thread})`.execute(store.db);
        await sql`insert into wire_runs (id, owner, thread_id, status, updated_at)
          values (${run}, 'oli', ${thread}, ${status}, now() - interval '1 minute')`.execute(store.db);
        await sql`insert into wire_run_chunks (run_id, seq, chunk)
          values (${run}, 1, ${JSON.stringify({ type: 'start' })}::jsonb)`.execute(store.db);
        if (approval) {
          await sql`insert into wire_approvals (id, owner, run_id, thread_id, tool_call_id, tool, input, status, expires_at)
            values (${`apr_${thread}`}, 'oli', ${run}, ${thread}, 'c1', 'reboot', '{}'::jsonb, ${approval},
              now() + interval '1 hour')`.execute(store.db);
        }
      };
      await orphan('lost-parked', 'awaiting_approval', 'pending');
      await orphan('lost-decided', 'awaiting_approval', 'approved');
      await orphan('lost-streaming', 'running', null);
      const reading = call('/threads/lost-streaming/stream?after=1').then((response) => response.text());

      // A stop of a run nobody runs any more ends it at once, cancelled, its approval dropped.
      // Every instance sweeps each 2 s and may end an orphan first (as instance_lost): the stop
      // then finds nothing in flight, and another orphan is stopped instead.
      let stopped: string | null = null;
      for (let attempt = 0; attempt < 5 && stopped === null; attempt++) {
        const thread = `lost-stopped-${attempt}`;
        await orphan(thread, 'awaiting_approval', 'pending');
        const { run } = await (await call(`/threads/${thread}/stop`, { method: 'POST', json: {} })).json();
        if (run === null) continue;
        expect(run).toMatchObject({ status: 'cancelled', stopReason: 'user' });
        stopped = thread;
      }
      expect(stopped).not.toBeNull();
      expect((await (await call(`/approvals/apr_${stopped}`)).json()).approval.status).toBe('dropped');

      // The others are ended by the sweep of a live instance, without anyone starting a turn.
      for (const thread of ['lost-parked', 'lost-decided', 'lost-streaming']) {
        const run = await eventually(async () => {
          const r = (await (await call(`/threads/${thread}`)).json()).thread;
          const latest = (await (await call(`/runs/run_${thread}`)).json()).run;
          return r && latest?.status === 'failed' ? latest : undefined;
        }, 10_000);
        expect(run.error.code).toBe('instance_lost');
      }
      for (const thread of ['lost-parked', 'lost-decided']) {
        const { approval } = await (await call(`/approvals/apr_${thread}`)).json();
        expect(approval.status).toBe('dropped');
      }
      // The reader that was waiting on the lost run's stream is let go.
      await reading;
    });

    it('refuses a new turn while another instance’s run is alive', async () => {
      const a = await instance(store, {
        model: scriptedModel([{ text: Array(20).fill('w '), chunkDelayMs: 50 }]).model,
      });
      const b = await instance(secondStore, { model: scriptedModel([{ text: ['no'] }]).model });
      const first = await callerFor(a.fetch, 'ned')('/chat', {
        method: 'POST',
        json: { id: 'busy2', message: 'one' },
      });
      const second = await callerFor(b.fetch, 'ned')('/chat', {
        method: 'POST',
        json: { id: 'busy2', message: 'two' },
      });
      expect(second.status).toBe(409);
      await readTurn(first);
    });
  });
}
