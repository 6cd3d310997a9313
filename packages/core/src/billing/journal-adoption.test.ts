import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fundedTenant, settlementOf } from '../../test/support/settlements.js';
import { openTestStore, type TestStore } from '../../test/support/stores.js';
import type { Logger } from '../http/logger.js';
import { lapsedInstances, startInstanceHeartbeat } from '../store/instances.js';
import { openSettlementJournal } from './journal.js';
import { createMeteringEngine, type MeteringEngine } from './metering.js';
import type { Settlement } from './settlement.js';

// Segments are named after the instance that wrote them and taken over once its heartbeat row
// has lapsed: whatever host name the adopter runs under, and never while the writer still beats.

const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-adopt-'));
  dirs.push(dir);
  return dir;
};
const segmentsIn = (dir: string) => readdirSync(dir).filter((name) => name.endsWith('.jsonl'));
const until = async (done: () => boolean | Promise<boolean>, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
};

describe('settlement journal adoption by instance (pglite)', () => {
  let store: TestStore;
  let tenantId: string;
  const closing: Array<{ close(): Promise<void> } | { stop(): Promise<void> }> = [];
  beforeAll(async () => {
    store = await openTestStore('pglite');
    tenantId = await fundedTenant(store, 'adoption', 10_000_000);
  });
  afterEach(async () => {
    for (const item of closing.splice(0).reverse()) {
      await ('close' in item ? item.close() : item.stop());
    }
  });
  afterAll(async () => {
    await store?.dispose();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const call = (costMicros: number) => settlementOf(tenantId, costMicros);
  const line = (s: Settlement) => `${JSON.stringify({ v: 1, ...s })}\n`;

  /** An instance row in the store, beating until `aliveForMs` from now (negative: lapsed). */
  const instanceRow = async (aliveForMs: number) => {
    const id = randomUUID();
    await store.db
      .insertInto('instances')
      .values({ id, alive_until: sql<Date>`now() + ${`${aliveForMs} milliseconds`}::interval` })
      .execute();
    return id;
  };
  /** What the calls cost in the ledger, and each usage id's number of rows. */
  const billed = async (ids: string[]) => {
    const rows = await store.db.selectFrom('usage_events').select('id').where('id', 'in', ids).execute();
    const debits = await store.db
      .selectFrom('ledger_entries')
      .select(({ fn }) => fn.sum<string>('amount_micros').as('total'))
      .where(
        'idempotency_key',
        'in',
        ids.map((id) => `usage:${id}`),
      )
      .executeTakeFirst();
    return {
      rows: rows.length,
      distinct: new Set(rows.map((r) => r.id)).size,
      micros: Number(debits?.total ?? 0),
    };
  };
  const engine = async (
    dir: string,
    extra: { logger?: Logger; judge?: boolean } = {},
  ): Promise<MeteringEngine> => {
    const heartbeat = await startInstanceHeartbeat(store.db, { beatMs: 50, ttlMs: 150 });
    closing.push(heartbeat);
    const instance =
      extra.judge === false
        ? { id: heartbeat.id, fresh: () => true, mayJudgeOthers: () => false }
        : heartbeat;
    const created = createMeteringEngine(store.db, {
      settleDelayMs: 1,
      adoptEveryMs: 30,
      instance,
      journal: await openSettlementJournal(dir, { instanceId: heartbeat.id }),
      ...(extra.logger ? { logger: extra.logger } : {}),
    });
    closing.push(created);
    return created;
  };

  it('names segments after the instance and settles a lapsed instance segment, whatever host wrote it', async () => {
    const dir = freshDir();
    // The writer: another container (its host name is nowhere in the name), now gone.
    const gone = await instanceRow(-1000);
    const calls = [call(100), call(200), call(300)];
    writeFileSync(join(dir, `settlements.${gone}.0.jsonl`), calls.map(line).join(''));

    const adopter = await engine(dir);
    const ids = calls.map((c) => c.usageId);
    await until(async () => (await billed(ids)).rows === 3 && adopter.unsettledCount === 0);
    expect(await billed(ids)).toEqual({ rows: 3, distinct: 3, micros: -600 });
    await until(() => segmentsIn(dir).length === 0);
    expect(segmentsIn(dir)).toEqual([]);

    // Its own calls go to a segment named after its heartbeat id.
    await adopter.record(call(10));
    expect(segmentsIn(dir)).toEqual([expect.stringMatching(/^settlements\.[0-9a-f-]{36}\.\d+\.jsonl$/)]);
    expect(segmentsIn(dir)[0]).not.toContain(hostname());
  });

  it('never takes the segment of an instance that still beats, nor judges before its own beat is steady', async () => {
    const dir = freshDir();
    const live = await instanceRow(60_000);
    const liveCall = call(111);
    writeFileSync(join(dir, `settlements.${live}.0.jsonl`), line(liveCall));
    const gone = await instanceRow(-1000);
    const goneCall = call(222);
    writeFileSync(join(dir, `settlements.${gone}.0.jsonl`), line(goneCall));

    // An adopter that may not judge yet (its heartbeat not steady) takes neither.
    await engine(dir, { judge: false });
    await new Promise((r) => setTimeout(r, 300));
    expect(segmentsIn(dir).sort()).toEqual(
      [`settlements.${gone}.0.jsonl`, `settlements.${live}.0.jsonl`].sort(),
    );
    expect(await billed([liveCall.usageId, goneCall.usageId])).toMatchObject({ rows: 0 });

    // One that may judge takes the lapsed one only.
    await engine(dir);
    await until(async () => (await billed([goneCall.usageId])).rows === 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(await billed([liveCall.usageId])).toMatchObject({ rows: 0 });
    expect(segmentsIn(dir)).toContain(`settlements.${live}.0.jsonl`);
    expect(await lapsedInstances(store.db, [live, gone])).toEqual(new Set([gone]));
  });

  it('lets one of two adopters racing for a segment take it, and bills its calls once', async () => {
    const dir = freshDir();
    const gone = await instanceRow(-1000);
    const calls = Array.from({ length: 20 }, (_, i) => call(1000 + i));
    writeFileSync(join(dir, `settlements.${gone}.0.jsonl`), calls.map(line).join(''));
    const ids = calls.map((c) => c.usageId);
    const expected = -calls.reduce((sum, c) => sum + c.costMicros, 0);

    // Both list the folder and ask the store before either renames: a real race for the file.
    const lapsed = (instanceIds: string[]) => lapsedInstances(store.db, instanceIds);
    const [a, b] = await Promise.all([
      openSettlementJournal(dir, { instanceId: randomUUID() }),
      openSettlementJournal(dir, { instanceId: randomUUID() }),
    ]);
    closing.push(a, b);
    const [fromA, fromB] = await Promise.all([a.adopt(lapsed), b.adopt(lapsed)]);
    expect([fromA.length, fromB.length].sort((x, y) => x - y)).toEqual([0, 20]);

    // Two engines on one folder, each adopting every 30 ms: only one logs taking the calls.
    const dir2 = freshDir();
    const gone2 = await instanceRow(-1000);
    const calls2 = Array.from({ length: 20 }, (_, i) => call(2000 + i));
    writeFileSync(join(dir2, `settlements.${gone2}.0.jsonl`), calls2.map(line).join(''));
    const taken: number[] = [];
    const logger: Logger = {
      info: (message, fields) => {
        if (message.startsWith('settling calls from the journal')) taken.push(Number(fields?.calls));
      },
      warn: () => {},
      error: () => {},
    };
    const [first, second] = await Promise.all([engine(dir2, { logger }), engine(dir2, { logger })]);
    const ids2 = calls2.map((c) => c.usageId);
    await until(
      async () => (await billed(ids2)).rows === 20 && first.unsettledCount + second.unsettledCount === 0,
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(taken).toEqual([20]);
    expect(await billed(ids2)).toEqual({
      rows: 20,
      distinct: 20,
      micros: -calls2.reduce((sum, c) => sum + c.costMicros, 0),
    });

    // The first race's calls, settled by whichever took them, are billed once as well.
    const winner = fromA.length > 0 ? fromA : fromB;
    const settler = createMeteringEngine(store.db, { settleDelayMs: 1 });
    closing.push(settler);
    await Promise.all(winner.map((s) => settler.settle(s)));
    await Promise.all(winner.map((s) => settler.settle(s)));
    expect(await billed(ids)).toEqual({ rows: 20, distinct: 20, micros: expected });
  });

  it('writes again to a fresh segment when an adopter renamed the one it was writing to', async () => {
    const dir = freshDir();
    const journal = await openSettlementJournal(dir, { instanceId: randomUUID() });
    const segments = () => readdirSync(dir).filter((name) => name.endsWith('.jsonl'));
    await journal.append(call(1));
    const [taken] = segments();
    // Another instance judged this one dead (a long cut from the store) and claimed its segment.
    renameSync(join(dir, taken!), join(dir, 'claimed-by-another.adopting'));
    const later = call(2);
    await journal.append(later);
    const now = segments();
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(taken);
    expect(readFileSync(join(dir, now[0]!), 'utf8')).toContain(later.usageId);
    await journal.close();
  });

  it('looks for an adopter after each write unless the heartbeat has stayed fresh since the segment began', async () => {
    const dir = freshDir();
    const heartbeat = { fresh: () => true, lapses: 0 };
    const journal = await openSettlementJournal(dir, { instanceId: randomUUID(), heartbeat });
    /** Takes the segment being written, as an adopter would; the next record must land in a fresh one. */
    const takeOverThenAppend = async (costMicros: number) => {
      const [taken] = segmentsIn(dir);
      renameSync(join(dir, taken!), join(dir, `claimed-${costMicros}.adopting`));
      const later = call(costMicros);
      await journal.append(later);
      expect(segmentsIn(dir)).toHaveLength(1);
      expect(segmentsIn(dir)[0]).not.toBe(taken);
      expect(readFileSync(join(dir, segmentsIn(dir)[0]!), 'utf8')).toContain(later.usageId);
    };
    await journal.append(call(1));
    // The heartbeat stopped landing: the instance may have been judged dead, so the write looks.
    heartbeat.fresh = () => false;
    await takeOverThenAppend(2);
    // Fresh again, but a beat found the row lapsed since this segment began: still looks.
    heartbeat.fresh = () => true;
    heartbeat.lapses = 1;
    await takeOverThenAppend(3);
    await journal.close();
  });

  it('still settles a segment named by the host and pid of a process that is gone', async () => {
    const dir = freshDir();
    const host =
      hostname()
        .replace(/[^A-Za-z0-9-]/g, '-')
        .slice(0, 63) || 'host';
    let pid = 4_000_000;
    for (; ; pid++) {
      try {
        process.kill(pid, 0);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ESRCH') break;
      }
    }
    const old = call(77);
    writeFileSync(join(dir, `settlements.${host}.${pid}.k1old.0.jsonl`), line(old));
    // Adopted at once (the old rule needs no store), even before this instance may judge others.
    await engine(dir, { judge: false });
    await until(async () => (await billed([old.usageId])).rows === 1);
    expect(await billed([old.usageId])).toEqual({ rows: 1, distinct: 1, micros: -77 });
  });
});
