import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fundedTenant, settlementOf } from '../../test/support/settlements.js';
import { openTestStore, type TestStore } from '../../test/support/stores.js';
import { createBatcher } from '../internal/batcher.js';
import type { SettlementJournal } from './journal.js';
import { createMeteringEngine } from './metering.js';
import { type Settlement, settleBatch } from './settlement.js';
import { BillNotDurableError, createUnsettledCalls } from './unsettled.js';

// Settlements share transactions: one record the store refuses must not keep the records batched
// with it from settling, nor be counted against them.

describe('unsettled calls with a record the store refuses (pglite)', () => {
  let store: TestStore;
  let tenantId: string;
  beforeAll(async () => {
    store = await openTestStore('pglite');
    tenantId = await fundedTenant(store, 'poison', 10_000_000);
  });
  afterAll(async () => store?.dispose());

  const call = (costMicros: number, tenant = tenantId) => settlementOf(tenant, costMicros, { holdMicros: 0 });
  const billedIds = async (ids: string[]) =>
    (await store.db.selectFrom('usage_events').select('id').where('id', 'in', ids).execute())
      .map((r) => r.id)
      .sort();
  const until = async (done: () => boolean | Promise<boolean>, ms = 5000) => {
    const deadline = Date.now() + ms;
    while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  };

  it('settles the good records batched with a poisoned one through the metering engine', async () => {
    const engine = createMeteringEngine(store.db, { settleDelayMs: 20 });
    const good = Array.from({ length: 5 }, (_, i) => call(100 + i));
    // A cost no ledger takes (RangeError in the transaction): it fails the batch it is in.
    const poisoned = call(1.5);
    await Promise.all([...good, poisoned].map((s) => engine.record(s)));
    const ids = good.map((s) => s.usageId);
    await until(async () => (await billedIds(ids)).length === 5);
    expect(await billedIds(ids)).toEqual([...ids].sort());
    expect(engine.unsettledCount).toBe(1);
    await engine.close();
  });

  it('settles at once for a reader that waits, not at the end of the batch delay', async () => {
    const engine = createMeteringEngine(store.db, { settleDelayMs: 10_000 });
    const calls = [call(300), call(301)];
    await Promise.all(calls.map((s) => engine.record(s)));
    const asked = Date.now();
    await engine.settled(tenantId);
    expect(Date.now() - asked).toBeLessThan(2000);
    expect(await billedIds(calls.map((s) => s.usageId))).toEqual(calls.map((s) => s.usageId).sort());
    await engine.close();
  });

  it('makes a call durable in the store when its journal cannot be written, and refuses when neither takes it', async () => {
    const opts = { freshKeys: false, uncapped: () => false };
    const full: SettlementJournal = {
      dir: '/full-disk',
      append: async () => {
        throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      },
      settled: () => {},
      adopt: async () => [],
      pendingCount: 0,
      close: async () => {},
    };
    let storeUp = true;
    const settle = async (settlement: Settlement) => {
      if (!storeUp) throw new Error('connection refused');
      const [result] = await store.db
        .transaction()
        .execute((trx) => settleBatch(trx, [settlement], new Date(), opts));
      return result!;
    };
    const errors: string[] = [];
    const unsettled = createUnsettledCalls({
      settle,
      reachable: async () => storeUp,
      journal: full,
      logger: { info: () => {}, warn: () => {}, error: (message) => errors.push(message) },
      retryMs: 5,
      maxRetryMs: 20,
    });
    // The journal refuses; the store takes it, and the record is durable once it has.
    const first = call(400);
    await unsettled.record(first);
    expect(await billedIds([first.usageId])).toEqual([first.usageId]);
    // Neither takes it: the record is not durable (the answer is cut), and it settles from
    // memory once the store is back.
    storeUp = false;
    const second = call(401);
    await expect(unsettled.record(second)).rejects.toBeInstanceOf(BillNotDurableError);
    storeUp = true;
    await until(() => unsettled.count === 0);
    expect(await billedIds([second.usageId])).toEqual([second.usageId]);
    expect(errors.some((message) => message.includes('journal append failed'))).toBe(true);
    unsettled.close();
  });

  it('counts only refusals of a record alone, and sets it aside after five', async () => {
    const opts = { freshKeys: false, uncapped: () => false };
    const together = createBatcher(
      (batch: Settlement[]) =>
        store.db.transaction().execute((trx) => settleBatch(trx, batch, new Date(), opts)),
      { delayMs: 5 },
    );
    const errors: Array<Record<string, unknown> | undefined> = [];
    let alone = 0;
    const unsettled = createUnsettledCalls({
      settle: together,
      settleAlone: async (s) => {
        alone++;
        const [result] = await store.db
          .transaction()
          .execute((trx) => settleBatch(trx, [s], new Date(), opts));
        return result!;
      },
      reachable: async () => true,
      journal: null,
      logger: { info: () => {}, warn: () => {}, error: (_message, fields) => errors.push(fields) },
      retryMs: 5,
      maxRetryMs: 20,
    });
    // A tenant that is gone, among good calls.
    const good = Array.from({ length: 8 }, (_, i) => call(200 + i));
    const poisoned = call(50, randomUUID());
    await Promise.all([...good, poisoned].map((s) => unsettled.record(s)));
    await until(() => unsettled.count === 0);
    expect(await billedIds(good.map((s) => s.usageId))).toEqual(good.map((s) => s.usageId).sort());
    expect(errors).toEqual([expect.objectContaining({ usage_id: poisoned.usageId, cost_micros: 50 })]);
    // The good ones settled with the batch retry or alone; the poisoned one was tried alone five times.
    expect(alone).toBeGreaterThanOrEqual(5);
    unsettled.close();
  });
});
