/**
 * An instance's lease of a tenant's credit under steady load: the calls that arrive while the
 * lease is being renewed in the store wait for the renewal and are admitted from the new lease,
 * instead of each going to the store (whose admissions would renew the lease again, and so on).
 *
 * @see docs/billing.md "Batching and leases"
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createMeteringEngine, type MeteringEngine } from '../src/billing/metering.js';
import { createStore } from '../src/store/create-store.js';
import { fundedTenant, settlementOf } from './support/settlements.js';
import { openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

/** The stores where an admission takes turns of the event loop: a server, or PGlite on its thread. */
const KINDS = [...STORE_KINDS.filter((kind) => kind !== 'pglite'), 'pglite thread'] as const;

const openStore = async (kind: (typeof KINDS)[number]): Promise<TestStore> => {
  if (kind !== 'pglite thread') return openTestStore(kind);
  // Inline, PGlite answers in microtasks: a renewal would end before any other call could start.
  const store = await createStore({ url: 'memory://', embedded: 'thread' });
  return Object.assign(store, { dispose: () => store.close() });
};

for (const kind of KINDS) {
  describe(`leases (${kind})`, () => {
    let store: TestStore;
    let metering: MeteringEngine | undefined;
    afterEach(async () => {
      await metering?.close();
      await store?.dispose();
    });

    it('admits the calls that arrive during a renewal from the renewed lease', async () => {
      store = await openStore(kind);
      const tenantId = await fundedTenant(store, 't', 1_000_000);
      metering = createMeteringEngine(store.db, { maxLeaseMicros: 5000 });
      const call = { tenantId, appId: null, holdMicros: 1000 };
      const admit = async () => {
        const result = await metering!.admit(call);
        if (!result.ok) throw new Error(`refused: ${result.reason}`);
        return result;
      };

      // The first call is admitted in the store, which grants the lease; five more spend it.
      const first = await admit();
      expect(first.leaseId).toBeNull();
      const leased = [];
      for (let i = 0; i < 5; i++) leased.push(await admit());
      expect(leased.every((result) => result.leaseId !== null)).toBe(true);

      // The lease is spent: the next call goes to the store and renews it. Calls arriving once
      // that admission is under way wait for it, then take from the renewed lease.
      const renewal = admit();
      await new Promise((resolve) => setImmediate(resolve));
      const during = await Promise.all(Array.from({ length: 4 }, admit));
      expect((await renewal).leaseId).toBeNull();
      expect(during.map((result) => result.leaseId)).toEqual(Array(4).fill(leased[0]!.leaseId));

      // Only the two calls admitted in the store hold rows of their own; the rest share the lease's.
      const holds = await store.db.selectFrom('holds').select('id').execute();
      expect(holds.map((hold) => hold.id).sort()).toEqual(
        [first.usageId, (await renewal).usageId, leased[0]!.leaseId].sort(),
      );
    });

    it("admits on one instance the credit another instance's idle lease held, and refuses past it", async () => {
      store = await openStore(kind);
      const tenantId = await fundedTenant(store, 't', 1_000_000);
      const a = createMeteringEngine(store.db);
      metering = createMeteringEngine(store.db);
      const engines = [a, metering];
      try {
        for (const engine of engines) await engine.follow(store);
        const call = { tenantId, appId: null, holdMicros: 10_000 };
        // One call on A, let go: A keeps a lease of a quarter of the credit, idle.
        const alone = await a.admit(call);
        if (!alone.ok) throw new Error('refused');
        await a.release(alone, tenantId);
        const leaseRows = await store.db.selectFrom('holds').select('amount_micros').execute();
        expect(leaseRows.map((row) => Number(row.amount_micros))).toEqual([247_500]);

        // Calls on B as the proxy makes them: admitted, answered, billed their hold.
        const b = metering;
        const callOnB = async () => {
          const admitted = await b.admit(call);
          if (admitted.ok) {
            const { usageId, holdMicros, leaseId } = admitted;
            await b.record(settlementOf(tenantId, holdMicros, { usageId, holdMicros, leaseId }));
          }
          return admitted;
        };
        // 90 at once: 900,000 of the 1,000,000, more than A's idle lease leaves.
        const results = await Promise.all(Array.from({ length: 90 }, callOnB));
        expect(results.filter((result) => !result.ok)).toEqual([]);
        // Past the credit, calls are still refused.
        const more = await Promise.all(Array.from({ length: 15 }, callOnB));
        expect(more.some((result) => !result.ok && result.reason === 'balance_exhausted')).toBe(true);
        // Every micro of the credit went to calls (the last ones on partial holds), none past it.
        const held = [...results, ...more].reduce(
          (sum, result) => sum + (result.ok ? result.holdMicros : 0),
          0,
        );
        expect(held).toBe(1_000_000);
        await b.settled();
        const wallet = await store.db
          .selectFrom('wallets')
          .select('balance_micros')
          .where('tenant_id', '=', tenantId)
          .executeTakeFirstOrThrow();
        expect(Number(wallet.balance_micros)).toBe(0);
      } finally {
        await a.close();
      }
    });
  });
}
