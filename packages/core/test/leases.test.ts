/**
 * An instance's lease of a tenant's credit under steady load: the calls that arrive while the
 * lease is being renewed in the store wait for the renewal and are admitted from the new lease,
 * instead of each going to the store (whose admissions would renew the lease again, and so on).
 *
 * @see docs/billing.md "Batching and leases"
 */
import { afterEach, describe, expect, it } from 'vitest';
import { post } from '../src/billing/ledger.js';
import { createMeteringEngine, type MeteringEngine } from '../src/billing/metering.js';
import { createStore } from '../src/store/create-store.js';
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
      const { id: tenantId } = await store.db
        .insertInto('tenants')
        .values({ name: 't' })
        .returning('id')
        .executeTakeFirstOrThrow();
      await post(store.db, { tenantId, amountMicros: 1_000_000, kind: 'grant', idempotencyKey: 'g' });
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
  });
}
