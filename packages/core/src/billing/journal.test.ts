import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fundedTenant, settlementOf } from '../../test/support/settlements.js';
import { openTestStore, type TestStore } from '../../test/support/stores.js';
import { openSettlementJournal } from './journal.js';
import { createMeteringEngine } from './metering.js';
import type { Settlement } from './settlement.js';

const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-journal-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const call = (usageId: string, tenantId = 'tenant-1', costMicros = 42): Settlement =>
  settlementOf(tenantId, costMicros, {
    usageId,
    quantities: { input_tokens: 10, output_tokens: 20, call: 1 },
    meterCosts: { input_tokens: 6, output_tokens: 36 },
    holdMicros: 5000,
  });

const segmentsIn = (dir: string) => readdirSync(dir).filter((name) => name.endsWith('.jsonl'));

/** A pid no process has now: the owner of a segment named with it is gone. */
function deadPid(): number {
  for (let pid = 4_000_000; ; pid++) {
    try {
      process.kill(pid, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH') return pid;
    }
  }
}
const host =
  hostname()
    .replace(/[^A-Za-z0-9-]/g, '-')
    .slice(0, 63) || 'host';

describe('settlement journal', () => {
  it('appends one line per call, durable when append resolves, and sheds segments once settled', async () => {
    const dir = freshDir();
    const journal = await openSettlementJournal(dir, { segmentRecords: 2 });
    await Promise.all([journal.append(call('a')), journal.append(call('b'))]);
    const [first] = segmentsIn(dir);
    const lines = readFileSync(join(dir, first!), 'utf8').trim().split('\n');
    expect(lines.map((l) => JSON.parse(l).usageId)).toEqual(['a', 'b']);
    expect(journal.pendingCount).toBe(2);

    // A third call starts the next segment; the first goes once both of its calls settled.
    await journal.append(call('c'));
    expect(segmentsIn(dir)).toHaveLength(2);
    journal.settled('a');
    expect(segmentsIn(dir)).toHaveLength(2);
    journal.settled('b');
    expect(segmentsIn(dir)).toHaveLength(1);
    journal.settled('c');
    await journal.close();
    expect(segmentsIn(dir)).toEqual([]);
  });

  it('hands the unsettled calls of a stopped journal to the next one, and never to two', async () => {
    const dir = freshDir();
    const first = await openSettlementJournal(dir);
    await first.append(call('kept-1'));
    await first.append(call('kept-2'));
    await first.append(call('done'));
    first.settled('done');
    // While it is open, its segment is not anyone else's.
    const sibling = await openSettlementJournal(dir);
    expect(await sibling.adopt()).toEqual([]);
    await first.close();

    const adopted = await sibling.adopt();
    expect(adopted.map((s) => s.usageId).sort()).toEqual(['done', 'kept-1', 'kept-2']);
    expect(adopted.find((s) => s.usageId === 'kept-1')).toEqual({ ...call('kept-1'), retried: true });
    expect(await sibling.adopt()).toEqual([]);
    const third = await openSettlementJournal(dir);
    expect(await third.adopt()).toEqual([]);
    for (const s of adopted) sibling.settled(s.usageId);
    expect(segmentsIn(dir)).toEqual([]);
    await sibling.close();
    await third.close();
  });

  it('notices its folder removed under it and writes the next calls to a fresh segment a restart reads', async () => {
    const dir = freshDir();
    const lost: string[] = [];
    const journal = await openSettlementJournal(dir, {
      onSegmentLost: (file) => lost.push(file),
      // A fresh heartbeat: no takeover to look for, so only the removal can be noticed.
      heartbeat: { fresh: () => true, lapses: 0 },
    });
    await journal.append(call('before'));
    rmSync(dir, { recursive: true, force: true });
    // Appended after the removal: on disk again when append resolves, in a file under the folder.
    await Promise.all([journal.append(call('after-1')), journal.append(call('after-2'))]);
    await journal.append(call('after-3'));
    expect(lost).toHaveLength(1);
    const onDisk = segmentsIn(dir).flatMap((name) =>
      readFileSync(join(dir, name), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).usageId),
    );
    expect(onDisk).toEqual(['after-1', 'after-2', 'after-3']);
    // Stopped before they settle: the next journal on the folder takes the calls over.
    await journal.close();
    const next = await openSettlementJournal(dir);
    expect((await next.adopt()).map((s) => s.usageId)).toEqual(['after-1', 'after-2', 'after-3']);
    await next.close();
  });

  it('skips a torn last line (a crash mid-write) and reads the rest', async () => {
    const dir = freshDir();
    const whole = (id: string) => `${JSON.stringify({ v: 1, ...call(id) })}\n`;
    const torn = whole('torn').slice(0, 60);
    writeFileSync(
      join(dir, `settlements.${host}.${deadPid()}.k1crash.0.jsonl`),
      whole('x') + whole('y') + torn,
    );
    const unreadable: number[] = [];
    const journal = await openSettlementJournal(dir, {
      onUnreadable: (_file, line) => unreadable.push(line),
    });
    expect((await journal.adopt()).map((s) => s.usageId)).toEqual(['x', 'y']);
    expect(unreadable).toEqual([3]);
    await journal.close();
  });

  it('leaves the segments of another host alone', async () => {
    const dir = freshDir();
    writeFileSync(
      join(dir, `settlements.other-host.${deadPid()}.k1other.0.jsonl`),
      `${JSON.stringify({ v: 1, ...call('elsewhere') })}\n`,
    );
    const journal = await openSettlementJournal(dir);
    expect(await journal.adopt()).toEqual([]);
    await journal.close();
  });
});

describe('settlement journal replay (pglite)', () => {
  let store: TestStore;
  let tenantId: string;
  const engines: Array<{ close(): Promise<void> }> = [];
  beforeAll(async () => {
    store = await openTestStore('pglite');
    tenantId = await fundedTenant(store, 'journal', 1_000_000);
  });
  afterEach(async () => {
    for (const engine of engines.splice(0)) await engine.close();
  });
  afterAll(async () => store?.dispose());

  const usage = async () => {
    const rows = await store.db
      .selectFrom('usage_events')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .execute();
    const wallet = await store.db
      .selectFrom('wallets')
      .select('balance_micros')
      .where('tenant_id', '=', tenantId)
      .executeTakeFirstOrThrow();
    return { ids: rows.map((r) => r.id).sort(), balance: wallet.balance_micros };
  };

  it('settles a replayed journal once, however many times it is replayed', async () => {
    const dir = freshDir();
    const ids = ['11111111-1111-4111-8111-111111111111', '22222222-2222-4222-8222-222222222222'];
    // An instance that recorded two calls, settled the first, and died before the second.
    const dying = await openSettlementJournal(dir);
    await dying.append(call(ids[0]!, tenantId, 100));
    await dying.append(call(ids[1]!, tenantId, 200));
    const live = createMeteringEngine(store.db, { settleDelayMs: 1 });
    engines.push(live);
    await live.settle(call(ids[0]!, tenantId, 100));
    await dying.close();
    const before = await usage();
    expect(before.ids).toEqual([ids[0]]);

    // Boot: the journal is adopted and every record settled; the one already billed is not billed again.
    const booted = createMeteringEngine(store.db, {
      settleDelayMs: 1,
      journal: await openSettlementJournal(dir),
    });
    engines.push(booted);
    const deadline = Date.now() + 5000;
    // Adoption is asynchronous (it may ask the store which instances are gone): wait for the bill.
    while (((await usage()).ids.length < 2 || booted.unsettledCount > 0) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const after = await usage();
    expect(after.ids).toEqual([...ids].sort());
    expect(after.balance).toBe(before.balance - 200);
    expect(segmentsIn(dir)).toEqual([]);

    // The same records again (a copy of the file, say) change nothing.
    const again = createMeteringEngine(store.db, { settleDelayMs: 1 });
    engines.push(again);
    await again.settle({ ...call(ids[0]!, tenantId, 100), retried: true });
    await again.settle({ ...call(ids[1]!, tenantId, 200), retried: true });
    expect(await usage()).toEqual(after);
  });

  it('keeps calls answered while the store is away and settles them when it is back', async () => {
    const dir = freshDir();
    let away = true;
    const db = store.db;
    // The store as seen through a connection that refuses while "away".
    const flaky = new Proxy(db, {
      get(target, property) {
        if (away && (property === 'transaction' || property === 'getExecutor')) {
          return () => {
            throw new Error('Connection terminated unexpectedly');
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const engine = createMeteringEngine(flaky, {
      settleDelayMs: 1,
      journal: await openSettlementJournal(dir),
    });
    engines.push(engine);
    const id = '33333333-3333-4333-8333-333333333333';
    const before = await usage();
    await engine.record(call(id, tenantId, 300));
    await new Promise((r) => setTimeout(r, 300));
    expect(engine.unsettledCount).toBe(1);
    expect(segmentsIn(dir)).toHaveLength(1);
    away = false;
    const left = await engine.drain(Date.now() + 5000);
    expect(left).toEqual({ inFlight: 0, unsettled: 0 });
    const after = await usage();
    expect(after.ids).toContain(id);
    expect(after.balance).toBe(before.balance - 300);
  });
});
