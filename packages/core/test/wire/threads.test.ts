/**
 * `GET /threads` pages: newest first, each thread exactly once however many share a moment
 * (one tick firing several of a user's schedules starts their threads together), and
 * `nextBefore` taken back as `?before=`.
 *
 * @see docs/wire.md "Routes"
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { titleFrom } from '../../src/agent/threads.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { endlessModel, reactiveModel } from './support/models.js';
import { connect, type Transport } from './support/transports.js';
import { callerFor, readTurn, TurnReader, testService } from './support/wire.js';

interface Page {
  threads: Array<{ id: string; updatedAt: string }>;
  nextBefore: string | null;
}

for (const kind of STORE_KINDS) {
  describe(`wire thread pages (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    const ada = () => callerFor((r) => service.fetch(r), 'ada');

    beforeAll(async () => {
      store = await openTestStore(kind);
      service = await testService(store, { model: reactiveModel(() => ({ text: ['Hello.'] })) });
      for (const id of ['t1', 't2', 't3', 't4', 't5', 't6', 't7']) {
        const turn = await ada()('/chat', { method: 'POST', json: { id, message: `hi ${id}` } });
        expect(turn.status).toBe(200);
        await readTurn(turn);
      }
      // Five threads in one millisecond, microseconds apart (as the store writes `now()`), and
      // two older ones.
      const moments: Record<string, string> = {
        t1: '2026-03-01 10:00:00.123001+00',
        t2: '2026-03-01 10:00:00.123400+00',
        t3: '2026-03-01 10:00:00.123999+00',
        t4: '2026-03-01 10:00:00.123400+00',
        t5: '2026-03-01 10:00:00.123002+00',
        t6: '2026-03-01 09:59:59.000000+00',
        t7: '2026-02-28 08:00:00.000000+00',
      };
      for (const [id, at] of Object.entries(moments)) {
        await sql`update wire_threads set updated_at = ${at}::timestamptz where owner = 'ada' and id = ${id}`.execute(
          store.db,
        );
      }
    });
    afterAll(async () => {
      await service?.close();
      await store?.dispose();
    });

    async function walk(limit: number): Promise<string[]> {
      const seen: string[] = [];
      let before: string | null = null;
      for (let pages = 0; pages < 20; pages++) {
        const query: string = `/threads?limit=${limit}${before ? `&before=${encodeURIComponent(before)}` : ''}`;
        const answer = await ada()(query);
        expect(answer.status).toBe(200);
        const page = (await answer.json()) as Page;
        seen.push(...page.threads.map((t) => t.id));
        before = page.nextBefore;
        if (!before) return seen;
      }
      throw new Error('the walk did not end');
    }

    it('lists every thread once, newest first, whatever the page size', async () => {
      const everything = await walk(100);
      // The five of one millisecond by id, newest id first; then the older two.
      expect(everything).toEqual(['t5', 't4', 't3', 't2', 't1', 't6', 't7']);
      for (const limit of [1, 2, 3, 4, 6]) expect(await walk(limit), `limit ${limit}`).toEqual(everything);
      // A full page with nothing after it is the last: no nextBefore to an empty page.
      const whole = (await (await ada()('/threads?limit=7')).json()) as Page;
      expect(whole.threads).toHaveLength(7);
      expect(whole.nextBefore).toBeNull();
    });

    it('titles a thread with its first 79 characters and an ellipsis, never cutting an emoji', async () => {
      const bea = callerFor((r) => service.fetch(r), 'bea');
      for (const [id, emoji] of [
        ['faces', '😀'],
        ['families', '👩‍👩‍👧'],
      ] as const) {
        const turn = await bea('/chat', { method: 'POST', json: { id, message: emoji.repeat(100) } });
        await readTurn(turn);
        const { thread } = (await (await bea(`/threads/${id}`)).json()) as { thread: { title: string } };
        expect(thread.title).toBe(`${emoji.repeat(79)}…`);
        expect(thread.title).not.toContain('\uFFFD');
      }
      // A long first message is titled at once: only its start is read (segmenting all of a
      // 100,000-character text takes seconds on Node 20, and a megabyte hours).
      const started = performance.now();
      const long = titleFrom({
        id: 'm',
        role: 'user',
        parts: [{ type: 'text', text: 'ab '.repeat(40_000) }],
      });
      expect(performance.now() - started).toBeLessThan(500);
      expect(long).toBe(`${'ab '.repeat(27).slice(0, 79)}…`);
      expect(titleFrom({ id: 'm', role: 'user', parts: [{ type: 'text', text: 'x'.repeat(80) }] })).toBe(
        'x'.repeat(80),
      );
    });

    it('takes an updatedAt alone as the threads older than it', async () => {
      const answer = await ada()(`/threads?before=${encodeURIComponent('2026-03-01T10:00:00.123Z')}`);
      expect(((await answer.json()) as Page).threads.map((t) => t.id)).toEqual(['t6', 't7']);
    });

    it('refuses a before that is neither', async () => {
      for (const before of [
        'yesterday',
        '2026-03-01T10:00:00.123Z~bad id',
        '2026-03-01T10:00:00Z~a~b',
        '~t1',
        // Date-times the store cannot hold: year 0, and years 0 and 10000 once read in UTC.
        '0000-01-01T00:00:00Z',
        '0001-01-01T00:00:00+14:00',
        '9999-12-31T23:59:59-14:00~t1',
      ]) {
        const answer = await ada()(`/threads?before=${encodeURIComponent(before)}`);
        expect(answer.status, before).toBe(400);
        expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('validation_failed');
      }
    });
  });
}

for (const kind of STORE_KINDS) {
  describe(`wire thread deletes (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    let transport: Transport;
    const ada = () => callerFor((r) => transport.fetch(r), 'ada');

    beforeAll(async () => {
      store = await openTestStore(kind);
      service = await testService(store, { model: endlessModel(20) });
      transport = await connect('express', service);
    });
    afterAll(async () => {
      await transport?.close();
      await service?.close();
      await store?.dispose();
    });

    it('deletes a thread once when deletes race while its turn runs', async () => {
      const turn = await ada()('/chat', { method: 'POST', json: { id: 'doomed', message: 'Talk on' } });
      const reader = new TurnReader(turn);
      await reader.until((frame) => frame.chunk.type === 'text-delta');
      // Each delete waits for the run to stop before removing the thread: all pass the first look.
      const answers = await Promise.all(
        [1, 2, 3].map(() => ada()('/threads/doomed', { method: 'DELETE', json: {} })),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([200, 404, 404]);
      for (const answer of answers.filter((a) => a.status === 404)) {
        expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('not_found');
      }
      await reader.rest();
      const activity = (await (await ada()('/activity?limit=200')).json()) as {
        events: Array<{ kind: string; data: { threadId?: string } }>;
      };
      const deleted = activity.events.filter(
        (e) => e.kind === 'thread.deleted' && e.data.threadId === 'doomed',
      );
      expect(deleted).toHaveLength(1);
    });
  });
}
