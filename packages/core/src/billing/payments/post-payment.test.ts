import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../../test/support/stores.js';
import { balanceMicros } from '../ledger.js';
import { postPayment } from './post-payment.js';

for (const kind of STORE_KINDS) {
  describe(`postPayment (${kind})`, () => {
    let store: TestStore;
    let tenants = 0;
    beforeAll(async () => {
      store = await openTestStore(kind);
    });
    afterAll(async () => store?.dispose());

    const newTenant = async () =>
      (
        await store.db
          .insertInto('tenants')
          .values({ name: `payments-${++tenants}` })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    const entries = (tenantId: string) =>
      store.db
        .selectFrom('ledger_entries')
        .select(['kind', 'amount_micros', 'idempotency_key'])
        .where('tenant_id', '=', tenantId)
        .orderBy('id')
        .execute();

    it('credits a purchase once: a replay of the event answers the first entry and posts nothing', async () => {
      const tenantId = await newTenant();
      const event = {
        tenantId,
        processor: 'test',
        eventId: 'evt_1',
        kind: 'purchase' as const,
        amountMicros: 5_000_000,
      };
      const first = await postPayment(store.db, event);
      const replay = await postPayment(store.db, event);
      expect(first).toMatchObject({ applied: true, balanceAfterMicros: 5_000_000 });
      expect(replay).toEqual({ ...first, applied: false });
      expect(await entries(tenantId)).toEqual([
        { kind: 'purchase', amount_micros: 5_000_000, idempotency_key: 'payment:test:evt_1' },
      ]);
    });

    it('tells each app of the tenant its new balance, once per event and not on a replay', async () => {
      const tenantId = await newTenant();
      const apps = await store.db
        .insertInto('apps')
        .values([
          { tenant_id: tenantId, name: 'one', slug: 'one' },
          { tenant_id: tenantId, name: 'two', slug: 'two' },
        ])
        .returning('id')
        .execute();
      const event = {
        tenantId,
        processor: 'test',
        eventId: 'evt_e',
        kind: 'purchase' as const,
        amountMicros: 3_000_000,
      };
      await postPayment(store.db, event);
      await postPayment(store.db, event);
      await postPayment(store.db, { ...event, eventId: 'evt_r', kind: 'refund', amountMicros: -1_000_000 });
      for (const app of apps) {
        const events = await store.db
          .selectFrom('app_events')
          .select(['kind', 'payload'])
          .where('app_id', '=', app.id)
          .orderBy('seq')
          .execute();
        expect(
          events.map((e) => [e.kind, (e.payload as { remaining_micros: number }).remaining_micros]),
        ).toEqual([
          ['billing.balance_changed', 3_000_000],
          ['billing.balance_changed', 2_000_000],
        ]);
      }
    });

    it('posts one of ten concurrent deliveries of one event, and runs the alongside step only for it', async () => {
      const tenantId = await newTenant();
      let alongside = 0;
      const results = await Promise.all(
        Array.from({ length: 10 }, () =>
          postPayment(
            store.db,
            { tenantId, processor: 'test', eventId: 'evt_c', kind: 'purchase', amountMicros: 25_000_000 },
            async (_trx, result) => {
              if (result.applied) alongside++;
            },
          ),
        ),
      );
      expect(results.filter((r) => r.applied)).toHaveLength(1);
      expect(alongside).toBe(1);
      expect(await balanceMicros(store.db, tenantId)).toBe(25_000_000);
    });

    it('debits a refund, and an alongside step that fails rolls the posting back', async () => {
      const tenantId = await newTenant();
      await postPayment(store.db, {
        tenantId,
        processor: 'test',
        eventId: 'p',
        kind: 'purchase',
        amountMicros: 10_000_000,
      });
      await expect(
        postPayment(
          store.db,
          { tenantId, processor: 'test', eventId: 'r', kind: 'refund', amountMicros: -4_000_000 },
          async () => {
            throw new Error('processor record failed');
          },
        ),
      ).rejects.toThrow('processor record failed');
      expect(await balanceMicros(store.db, tenantId)).toBe(10_000_000);
      await postPayment(store.db, {
        tenantId,
        processor: 'test',
        eventId: 'r',
        kind: 'refund',
        amountMicros: -4_000_000,
      });
      expect(await balanceMicros(store.db, tenantId)).toBe(6_000_000);
      expect((await entries(tenantId)).map((e) => e.kind)).toEqual(['purchase', 'refund']);
    });

    it('refuses amounts of the wrong sign or not whole', async () => {
      const tenantId = await newTenant();
      const base = { tenantId, processor: 'test', eventId: 'bad' };
      await expect(postPayment(store.db, { ...base, kind: 'purchase', amountMicros: -1 })).rejects.toThrow(
        RangeError,
      );
      await expect(postPayment(store.db, { ...base, kind: 'refund', amountMicros: 1 })).rejects.toThrow(
        RangeError,
      );
      await expect(postPayment(store.db, { ...base, kind: 'adjustment', amountMicros: 0 })).rejects.toThrow(
        RangeError,
      );
      await expect(postPayment(store.db, { ...base, kind: 'purchase', amountMicros: 1.5 })).rejects.toThrow(
        RangeError,
      );
      expect(await entries(tenantId)).toEqual([]);
    });
  });
}
