import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { temporaryDataFolders } from '../../test/support/stores.js';
import { asText, DATE_OID, INT8_OID, NUMERIC_OID, parseInt8 } from './int8.js';
import { InlinePGlite } from './pglite-inline.js';
import { MAX_PREPARED, type PreparedPGlite } from './pglite-prepared.js';
import { openPGliteThread } from './pglite-thread.js';

// Every engine here starts on a copy of a migrated data folder (`makeDataFolder`): creating a
// database (initdb) costs several seconds of CPU, and these tests are about what runs on an
// engine, not about creating one.
const dataFolders = temporaryDataFolders();
/** A plain PGlite with the store's parsers: what `PGlite.query` answers. Shared by both engines. */
let plain: PGlite;
beforeAll(async () => {
  plain = new PGlite({
    dataDir: await dataFolders.make(),
    parsers: { [INT8_OID]: parseInt8, [DATE_OID]: asText, [NUMERIC_OID]: asText },
  });
});
afterAll(async () => {
  await plain?.close();
  dataFolders.removeAll();
});

describe.each([
  ['inline', async () => InlinePGlite.open(await dataFolders.make())],
  ['on its thread', async () => openPGliteThread(await dataFolders.make())],
])('embedded store %s: statements in one trip', (_where, open) => {
  let db: PreparedPGlite;
  beforeAll(async () => {
    db = await open();
    // The plain engine's table afresh for each engine compared with it.
    await plain.exec('drop table if exists things');
    for (const target of [db, plain]) {
      await target.exec(`
        create table things (
          id uuid primary key, n bigint, price numeric, day date, at timestamptz,
          flag boolean, doc jsonb, tags text[], label text
        )`);
    }
  });
  afterAll(async () => {
    await db?.close();
  });

  /** The texts of the statements the engine holds parsed for this session. */
  async function parsedInEngine(): Promise<string[]> {
    const { rows } = await db.query<{ statement: string }>(
      'select statement from pg_prepared_statements',
      [],
    );
    return rows.map((row) => row.statement);
  }

  /** How many trips into the engine `run` made. */
  async function tripsOf(run: () => Promise<unknown>): Promise<number> {
    const trips = vi.spyOn(db.engine, 'execProtocol');
    try {
      await run();
      return trips.mock.calls.length;
    } finally {
      trips.mockRestore();
    }
  }

  it('writes and reads every kind of value as PGlite.query does', async () => {
    const insert =
      'insert into things (id, n, price, day, at, flag, doc, tags, label) values ($1, $2, $3, $4, $5, $6, $7, $8, $9)';
    const values = [
      '00000000-0000-4000-8000-000000000001',
      9_007_199_254_740_991,
      '12.500',
      '2026-11-27',
      new Date('2026-11-27T10:00:00.123Z'),
      true,
      { a: [1, 'two', null], 'quote"s': 'ünï\u{1F600}' },
      ['x', 'y,z', 'with "quotes"'],
      null,
    ];
    await db.query(insert, values);
    await plain.query(insert, values);
    const select = 'select * from things where id = any($1::uuid[]) and flag = $2';
    const params = [['00000000-0000-4000-8000-000000000001'], true];
    const ours = await db.query(select, params);
    expect(ours.rows).toHaveLength(1);
    expect(ours.rows).toEqual((await plain.query(select, params)).rows);
    expect(ours.fields).toEqual((await plain.query(select, params)).fields);
    const update = 'update things set label = $1 where n = $2';
    expect((await db.query(update, ['seen', 9_007_199_254_740_991])).affectedRows).toBe(1);
    expect((await plain.query(update, ['seen', 9_007_199_254_740_991])).affectedRows).toBe(1);
  });

  it('parses a statement once, then runs it in one trip each time', async () => {
    const text = 'select count(*)::int as count from things where label = $1';
    const five = async () => {
      for (let i = 0; i < 5; i++) expect((await db.query(text, ['seen'])).rows).toEqual([{ count: 1 }]);
    };
    expect(await tripsOf(five)).toBe(6);
    expect(await tripsOf(five)).toBe(5);
    expect((await parsedInEngine()).filter((parsed) => parsed === text)).toHaveLength(1);
  });

  it('runs an insert whose conflict target is a partial index with a parameter in its predicate', async () => {
    await db.exec(
      'create table ranked (owner text, slot text, kind text); ' +
        "create unique index ranked_one on ranked (owner, slot) where kind <> 'app'",
    );
    const insert =
      'insert into ranked (owner, slot, kind) values ($1, $2, $3) on conflict (owner, slot) where kind <> $4 do nothing';
    for (let i = 0; i < 8; i++) await db.query(insert, ['ann', 'a', 'remix', 'app']);
    expect((await db.query('select count(*)::int as n from ranked where owner = $1', ['ann'])).rows).toEqual([
      { n: 1 },
    ]);
  });

  it('rejects a bad statement or a bad value with the Postgres error, and goes on working', async () => {
    await expect(db.query('selec $1', [1])).rejects.toMatchObject({ code: '42601' });
    const text = 'select id from things where id = $1';
    await expect(db.query(text, ['not-a-uuid'])).rejects.toMatchObject({ code: '22P02' });
    expect((await db.query(text, ['00000000-0000-4000-8000-000000000001'])).rows).toHaveLength(1);
    // Inside a transaction: the failed statement aborts it, and after its rollback all works again.
    await db.exec('begin');
    await expect(db.query(text, ['not-a-uuid'])).rejects.toMatchObject({ code: '22P02' });
    await expect(db.query(text, ['00000000-0000-4000-8000-000000000001'])).rejects.toMatchObject({
      code: '25P02',
    });
    // A text first seen in the aborted transaction is parsed after it.
    const fresh = 'select label from things where id = $1';
    await expect(db.query(fresh, ['00000000-0000-4000-8000-000000000001'])).rejects.toMatchObject({
      code: '25P02',
    });
    await db.exec('rollback');
    expect((await db.query(text, ['00000000-0000-4000-8000-000000000001'])).rows).toHaveLength(1);
    expect((await db.query(fresh, ['00000000-0000-4000-8000-000000000001'])).rows).toHaveLength(1);
    // Parsed once in the engine, after the rollback: the attempt in the aborted transaction left nothing.
    expect((await parsedInEngine()).filter((parsed) => parsed === fresh)).toHaveLength(1);
  });

  it('parses again after a script that changes the schema', async () => {
    const text = 'update things set tags = $1 where id = $2 returning tags';
    const id = '00000000-0000-4000-8000-000000000001';
    expect((await db.query(text, [['a', 'b'], id])).rows).toEqual([{ tags: ['a', 'b'] }]);
    await db.exec('alter table things alter column tags type jsonb using to_jsonb(tags)');
    // Written as a text[] still, the array would be refused as JSON.
    expect((await db.query(text, [['c', { d: 1 }], id])).rows).toEqual([{ tags: ['c', { d: 1 }] }]);
    const star = 'select * from things where id = $1';
    expect(Object.keys((await db.query(star, [id])).rows[0] as object)).not.toContain('added');
    await db.exec('alter table things add column added text');
    expect(Object.keys((await db.query(star, [id])).rows[0] as object)).toContain('added');
  });

  it('parses again after a rollback undoes a schema change, and after a script of several statements', async () => {
    await db.exec("create table shapes (id int primary key, a text); insert into shapes values (1, 'x')");
    const star = 'select * from shapes where id = $1';
    await db.exec('begin');
    await db.exec('alter table shapes add column b int');
    expect(Object.keys((await db.query(star, [1])).rows[0] as object)).toEqual(['id', 'a', 'b']);
    await db.exec('rollback');
    // Read inside a transaction, where a stale statement's failure could not be run again.
    const inTransaction = async () => {
      await db.exec('begin');
      try {
        return (await db.query(star, [1])).rows;
      } finally {
        await db.exec('commit');
      }
    };
    expect(await inTransaction()).toEqual([{ id: 1, a: 'x' }]);
    // A script that begins like transaction control but changes the schema after.
    await db.exec('begin; alter table shapes add column c int; commit');
    expect(await inTransaction()).toEqual([{ id: 1, a: 'x', c: null }]);
  });

  it('parses again when the engine let go of its statements', async () => {
    const text = 'select count(*)::int as n from things where id = $1';
    const id = '00000000-0000-4000-8000-000000000001';
    expect((await db.query(text, [id])).rows).toEqual([{ n: 1 }]);
    await db.query('deallocate all', []);
    // Outside a transaction the run is tried once more, parsed afresh.
    expect((await db.query(text, [id])).rows).toEqual([{ n: 1 }]);
    // Inside one the failure has aborted it: it is answered, and the next run after it parses afresh.
    await db.exec('begin');
    await db.query('deallocate all -- a text of its own: the first one is gone with the rest', []);
    await expect(db.query(text, [id])).rejects.toMatchObject({ code: '26000' });
    await db.exec('rollback');
    expect((await db.query(text, [id])).rows).toEqual([{ n: 1 }]);
  });

  it('keeps a bounded number of statement texts parsed, in the engine too', async () => {
    for (let i = 0; i < MAX_PREPARED + 50; i++) await db.query(`select $1::int + ${i} as n`, [1]);
    expect(await tripsOf(() => db.query(`select $1::int + ${MAX_PREPARED + 49} as n`, [1]))).toBe(1);
    expect(await tripsOf(() => db.query('select $1::int + 0 as n', [1]))).toBe(2);
    // The statements let go of are closed in the engine, not only forgotten here.
    expect((await parsedInEngine()).length).toBeLessThanOrEqual(MAX_PREPARED);
  });

  it('delivers the notifications its statements send', async () => {
    const heard: Array<string | null> = [];
    const stop = await db.listen('inline_test', (payload) => heard.push(payload));
    await db.query('select pg_notify($1, $2)', ['inline_test', 'hello']);
    await stop();
    expect(heard).toEqual(['hello']);
  });
});

describe.each([
  ['inline', async () => InlinePGlite.open(await dataFolders.make())],
  ['on its thread', async () => openPGliteThread(await dataFolders.make())],
])('embedded store %s: turns', (_where, open) => {
  // One engine for the three tests (each on tables or channels of its own); the one that closes
  // it runs last.
  let db: PreparedPGlite;
  let closed = false;
  beforeAll(async () => {
    db = await open();
  });
  afterAll(async () => {
    if (!closed) await db?.close();
  });

  it('runs a script that changes the schema in its turn among the statements around it', async () => {
    await db.exec('create table shaped (id int primary key, tags text[])');
    await db.query('insert into shaped values ($1, $2)', [1, ['a']]);
    const update = 'update shaped set tags = $1 where id = 1';
    const before = db.query(update, [['b']]);
    const script = db.exec('alter table shaped alter column tags type jsonb using to_jsonb(tags)');
    const after = db.query(update, [JSON.stringify(['c'])]);
    await Promise.all([before, script, after]);
    const { rows } = await db.query<{ tags: unknown }>('select tags from shaped where id = $1', [1]);
    expect(rows).toEqual([{ tags: ['c'] }]);
  });

  it('hears a channel whose first LISTEN failed, once it is asked again', async () => {
    await db.exec('begin');
    await db.exec('select 1 / 0').catch(() => {});
    // Inside the failed transaction the LISTEN is refused.
    await expect(db.listen('turns_test', () => {})).rejects.toMatchObject({ code: '25P02' });
    await db.exec('rollback');
    const heard: Array<string | null> = [];
    const stop = await db.listen('turns_test', (payload) => heard.push(payload));
    await db.query('select pg_notify($1, $2)', ['turns_test', 'hi']);
    await expect.poll(() => heard).toEqual(['hi']);
    await stop();
  });

  it('finishes the statements asked for before it is closed', async () => {
    await db.exec('create table counted (n int)');
    const inserts = Array.from({ length: 20 }, (_, i) => db.query('insert into counted values ($1)', [i]));
    closed = true;
    const closing = db.close();
    const outcomes = await Promise.allSettled(inserts);
    await closing;
    expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(20).fill('fulfilled'));
  });
});
