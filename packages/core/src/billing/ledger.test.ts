import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { balanceMicros, microsToUsd, post } from './ledger.js';

for (const kind of STORE_KINDS) {
  describe(`ledger (${kind})`, () => {
    let store: TestStore;
    let tenantId: string;
    beforeAll(async () => {
      store = await openTestStore(kind);
      tenantId = (
        await store.db
          .insertInto('tenants')
          .values({ name: 'ledger' })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    });
    afterAll(async () => store?.dispose());

    const sumOfLedger = async () => {
      const rows = await store.db
        .selectFrom('ledger_entries')
        .select('amount_micros')
        .where('tenant_id', '=', tenantId)
        .execute();
      return rows.reduce((sum, r) => sum + r.amount_micros, 0);
    };

    it('moves the wallet by each posting and records the balance after it', async () => {
      const first = await post(store.db, {
        tenantId,
        amountMicros: 5_000_000,
        kind: 'grant',
        idempotencyKey: 'g1',
      });
      const second = await post(store.db, {
        tenantId,
        amountMicros: -1_250_000,
        kind: 'usage',
        idempotencyKey: 'u1',
      });
      expect(first).toMatchObject({ applied: true, balanceAfterMicros: 5_000_000 });
      expect(second).toMatchObject({ applied: true, balanceAfterMicros: 3_750_000 });
      expect(await balanceMicros(store.db, tenantId)).toBe(3_750_000);
    });

    it('applies a retried posting with the same idempotency key once', async () => {
      const before = await balanceMicros(store.db, tenantId);
      const first = await post(store.db, {
        tenantId,
        amountMicros: 700,
        kind: 'reload',
        idempotencyKey: 'r1',
      });
      const again = await post(store.db, {
        tenantId,
        amountMicros: 700,
        kind: 'reload',
        idempotencyKey: 'r1',
      });
      expect(again).toEqual({
        entryId: first.entryId,
        balanceAfterMicros: first.balanceAfterMicros,
        applied: false,
      });
      expect(await balanceMicros(store.db, tenantId)).toBe(before + 700);
    });

    it('keeps balance equal to the sum of the ledger under concurrent postings and retries', async () => {
      const postings = Array.from({ length: 60 }, (_, i) =>
        post(store.db, {
          tenantId,
          amountMicros: i % 3 === 0 ? 1_000 : -300,
          kind: i % 3 === 0 ? 'grant' : 'usage',
          idempotencyKey: `c${i % 40}`,
        }),
      );
      const results = await Promise.all(postings);
      expect(results.filter((r) => r.applied)).toHaveLength(40);
      expect(await balanceMicros(store.db, tenantId)).toBe(await sumOfLedger());
    });

    it('answers 0 for a tenant without a wallet', async () => {
      const other = await store.db
        .insertInto('tenants')
        .values({ name: 'empty' })
        .returning('id')
        .executeTakeFirstOrThrow();
      expect(await balanceMicros(store.db, other.id)).toBe(0);
    });

    it('refuses a non-integer amount', async () => {
      await expect(
        post(store.db, { tenantId, amountMicros: 1.5, kind: 'grant', idempotencyKey: 'bad' }),
      ).rejects.toThrow(RangeError);
    });
  });
}

describe('microsToUsd', () => {
  it('rounds to cents and keeps the sign', () => {
    expect(microsToUsd(12_345_678)).toBe(12.35);
    expect(microsToUsd(-3_456_789)).toBe(-3.46);
    expect(microsToUsd(4_999)).toBe(0);
    expect(Object.is(microsToUsd(-4_999), 0)).toBe(true);
    expect(microsToUsd(5_000)).toBe(0.01);
  });
});
