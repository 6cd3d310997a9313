import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { temporaryDataFolders } from '../../test/support/stores.js';
import { isStoreUnavailable } from './availability.js';
import { createStore, type Store } from './create-store.js';
import { createPGliteDialect } from './pglite-dialect.js';
import { InlinePGlite } from './pglite-inline.js';
import type { PreparedPGlite } from './pglite-prepared.js';
import { openPGliteThread, type ThreadEngine } from './pglite-thread.js';

/** The longest a 5 ms timer of this thread waited while `work` ran. */
async function longestTimerLag(work: () => Promise<unknown>): Promise<number> {
  let longest = 0;
  let running = true;
  const ticking = (async () => {
    while (running) {
      const asked = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 5));
      longest = Math.max(longest, performance.now() - asked - 5);
    }
  })();
  await work();
  running = false;
  await ticking;
  return longest;
}

/** A statement PGlite needs a good while to run. */
const SLOW = sql`select count(*)::int as n from generate_series(1, 4000000)`;

describe('the embedded store on its own thread', () => {
  // The engines here start on copies of a migrated data folder (`makeDataFolder`): creating a
  // database (initdb), in memory or on disk, costs several seconds of CPU, and these tests are
  // about what runs on an engine, not about creating one.
  const dataFolders = temporaryDataFolders();
  // One store of each kind, shared by the tests that only run statements on them. Not migrated
  // again: these tests make tables of their own.
  let thread: Store;
  let inline: Store;
  beforeAll(async () => {
    [thread, inline] = await Promise.all([
      createStore({ url: '', dataDir: await dataFolders.make(), migrate: false }),
      createStore({ url: '', dataDir: await dataFolders.make(), migrate: false, embedded: 'inline' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([thread?.close(), inline?.close()]);
    dataFolders.removeAll();
  });

  it("is the default, and keeps this thread's timers on time while a long statement runs, which inline does not", async () => {
    expect([thread.embedded, inline.embedded]).toEqual(['thread', 'inline']);
    let inlineTook = 0;
    const inlineLag = await longestTimerLag(async () => {
      const started = performance.now();
      await SLOW.execute(inline.db);
      inlineTook = performance.now() - started;
    });
    const threadLag = await longestTimerLag(() => SLOW.execute(thread.db));
    // Inline, the statement holds the thread for (nearly) its whole run; on its own thread, not.
    expect(inlineLag).toBeGreaterThan(inlineTook / 2);
    expect(threadLag).toBeLessThan(Math.max(50, inlineLag / 4));
  });

  it('answers rows, counts and errors as the inline store does', async () => {
    for (const { db } of [thread, inline]) {
      await sql`create table t (id int8 primary key, at timestamptz, d date, n numeric, j jsonb, b bytea)`.execute(
        db,
      );
      const at = new Date('2026-01-02T03:04:05.678Z');
      const inserted =
        await sql`insert into t values (1, ${at}, '2026-01-02', 1.5, ${JSON.stringify({ a: [1] })}, ${Buffer.from('hi')}), (2, null, null, null, null, null)`.execute(
          db,
        );
      expect(inserted.numAffectedRows).toBe(2n);
      const { rows } = await sql<{
        id: number;
        at: Date;
        d: string;
        n: string;
        j: unknown;
        b: Uint8Array;
      }>`select * from t order by id`.execute(db);
      expect(rows[0]).toMatchObject({ id: 1, d: '2026-01-02', n: '1.5', j: { a: [1] } });
      expect(rows[0]!.at.getTime()).toBe(at.getTime());
      expect(Buffer.from(rows[0]!.b).toString()).toBe('hi');
      const duplicate = await sql`insert into t (id) values (1)`.execute(db).catch((error: unknown) => error);
      expect(duplicate).toMatchObject({ code: '23505', constraint: 't_pkey', table: 't' });
      expect((duplicate as Error).message).toMatch(/duplicate key/);
      const tooBig = await sql`select 9007199254740993::int8 as big`
        .execute(db)
        .catch((error: unknown) => error);
      expect(tooBig).toBeInstanceOf(RangeError);
    }
  });

  it('delivers notifications, and stops delivering once unsubscribed', async () => {
    const store = thread;
    const heard: string[] = [];
    const stop = await store.listen('thread_test', (payload) => heard.push(payload ?? ''));
    await sql`select pg_notify('thread_test', 'one')`.execute(store.db);
    await expect.poll(() => heard).toEqual(['one']);
    await stop();
    await sql`select pg_notify('thread_test', 'two')`.execute(store.db);
    await sql`select 1`.execute(store.db);
    expect(heard).toEqual(['one']);
  });

  it('starts each new WAL segment without filling it with zeros, inline and on its thread', async () => {
    for (const openEngine of [InlinePGlite.open, openPGliteThread]) {
      const folder = await dataFolders.make();
      const wal = join(folder, 'pg_wal');
      const copied = readdirSync(wal);
      const db = await openEngine(folder);
      try {
        await db.exec('select pg_switch_wal(); create table written (n int)');
        // Read while open: closing checkpoints, and recycles old segments as the next ones.
        const segments = readdirSync(wal)
          .filter((name) => /^[0-9A-F]{24}$/.test(name))
          .sort();
        // Made by this engine, not one the copied folder held.
        expect(copied).not.toContain(segments.at(-1));
        const newest = statSync(join(wal, segments.at(-1)!));
        // Full size, but only the pages written hold disk blocks: the zeros were never written.
        expect(segments.length).toBeGreaterThan(1);
        expect(newest.size).toBe(16 * 1024 * 1024);
        expect(newest.blocks * 512).toBeLessThan(1024 * 1024);
      } finally {
        await db.close();
      }
    }
  });

  it('answers every statement after close as the store being unreachable', async () => {
    const db = await openPGliteThread(await dataFolders.make());
    await expect(db.query<{ one: number }>('select 1 as one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
    await db.close();
    const error = await db.query('select 1').catch((caught: unknown) => caught);
    expect(isStoreUnavailable(error)).toBe(true);
  });

  describe('when its thread stops', () => {
    const engines: PreparedPGlite[] = [];
    afterEach(async () => {
      await Promise.all(engines.splice(0).map((engine) => engine.close()));
    });
    const openOnFolder = async () => {
      const engine = await openPGliteThread(await dataFolders.make(), { restartAfterMs: 50 });
      engines.push(engine);
      return engine;
    };
    /** Stops the engine's thread as an abort would, and waits until a statement is refused. */
    const stopThread = async (engine: PreparedPGlite) => {
      await (engine.engine as ThreadEngine).thread.terminate();
      const refused = await engine.query('select 1').catch((error: unknown) => error);
      expect(isStoreUnavailable(refused)).toBe(true);
    };
    const cameBack = (engine: PreparedPGlite) =>
      expect
        .poll(
          () =>
            engine.query('select 1').then(
              () => true,
              () => false,
            ),
          { timeout: 20_000, interval: 50 },
        )
        .toBe(true);

    it('starts again on its folder, with what was committed, its named statements parsed again and its channels heard again', async () => {
      const engine = await openOnFolder();
      await engine.exec('create table kept (n int)');
      await engine.query('insert into kept values ($1)', [1]);
      const heard: Array<string | null> = [];
      await engine.listen('restart_test', (payload) => heard.push(payload));
      await stopThread(engine);
      await cameBack(engine);
      expect((engine.engine as ThreadEngine).restarts?.()).toBe(1);
      // The same text again: the new engine never parsed it, and it runs.
      await engine.query('insert into kept values ($1)', [2]);
      expect((await engine.query<{ n: number }>('select n from kept order by n')).rows).toEqual([
        { n: 1 },
        { n: 2 },
      ]);
      await engine.query(`select pg_notify('restart_test', 'after')`);
      // `null` first: what the stopped engine had not delivered may be lost.
      await expect.poll(() => heard).toEqual([null, 'after']);
    });

    it('fails a transaction that was open to its end, and runs none of its statements outside it', async () => {
      const engine = await openOnFolder();
      const db = new Kysely<{ rows: { n: number } }>({ dialect: createPGliteDialect(engine) });
      await sql`create table rows (n int)`.execute(db);
      const outcome = await db
        .transaction()
        .execute(async (trx) => {
          await sql`insert into rows values (${1})`.execute(trx);
          await stopThread(engine);
          await expect
            .poll(() => (engine.engine as ThreadEngine).restarts?.(), { timeout: 20_000, interval: 50 })
            .toBe(1);
          // Would run on the new engine in no transaction at all, and be kept.
          await sql`insert into rows values (${2})`.execute(trx);
        })
        .catch((error: unknown) => error);
      expect(isStoreUnavailable(outcome)).toBe(true);
      expect((outcome as Error).message).toMatch(/transaction under way was lost/);
      // Neither row: the first went with the engine that stopped, the second never ran.
      const { rows } = await sql<{ n: number }>`select n from rows`.execute(db);
      expect(rows).toEqual([]);
      // The next transaction runs as usual.
      await db.transaction().execute((trx) => sql`insert into rows values (${3})`.execute(trx));
      expect((await sql<{ n: number }>`select n from rows`.execute(db)).rows).toEqual([{ n: 3 }]);
    });

    it('takes a transaction rolled back while its thread was down as ended: the statements after it run', async () => {
      const engine = await openOnFolder();
      const db = new Kysely<{ rows: { n: number } }>({ dialect: createPGliteDialect(engine) });
      await sql`create table rows (n int)`.execute(db);
      const outcome = await db
        .transaction()
        .execute(async (trx) => {
          await sql`insert into rows values (${1})`.execute(trx);
          // Its next statement fails while the thread is down, and the rollback with it.
          await stopThread(engine);
          await sql`insert into rows values (${2})`.execute(trx);
        })
        .catch((error: unknown) => error);
      expect(isStoreUnavailable(outcome)).toBe(true);
      expect((engine.engine as ThreadEngine).restarts?.()).toBe(0);
      await expect
        .poll(() => (engine.engine as ThreadEngine).restarts?.(), { timeout: 20_000, interval: 50 })
        .toBe(1);
      // Not refused as that transaction's: its caller ended it.
      await db.transaction().execute((trx) => sql`insert into rows values (${3})`.execute(trx));
      expect((await sql<{ n: number }>`select n from rows`.execute(db)).rows).toEqual([{ n: 3 }]);
    });

    it('stays unreachable in memory, where there is nothing to come back to', async () => {
      const engine = await openPGliteThread(undefined, { restartAfterMs: 50 });
      engines.push(engine);
      await stopThread(engine);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const refused = await engine.query('select 1').catch((error: unknown) => error);
      expect(isStoreUnavailable(refused)).toBe(true);
    });
  });
});
