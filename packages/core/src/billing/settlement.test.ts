import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fundedTenant, settlementOf } from '../../test/support/settlements.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { mismatchedDebits } from '../../test/support/usage-debits.js';
import { balanceMicros } from './ledger.js';
import { debitDescription, type Settlement, settleBatch } from './settlement.js';

const CREDIT = 1_000_000;

describe.each(STORE_KINDS)('settlement of a batch (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => store?.dispose());

  const settle = (batch: Settlement[], freshKeys = true) =>
    store.db
      .transaction()
      .execute((trx) => settleBatch(trx, batch, new Date(), { freshKeys, uncapped: () => true }));
  const debitsOf = (tenantId: string) =>
    store.db
      .selectFrom('ledger_entries')
      .select(['id', 'amount_micros', 'balance_after_micros', 'idempotency_key', 'description'])
      .where('tenant_id', '=', tenantId)
      .where('kind', '=', 'usage')
      .orderBy('id')
      .execute();
  const walletOf = (tenantId: string) => balanceMicros(store.db, tenantId);

  it('debits each tenant once for its calls, and each call reports the balance right after it', async () => {
    const a = await fundedTenant(store, 'batch-a', CREDIT);
    const b = await fundedTenant(store, 'batch-b', CREDIT);
    const batch = [
      settlementOf(a, 100),
      settlementOf(b, 7),
      settlementOf(a, 250, { model: 'demo-large' }),
      settlementOf(a, 50),
    ];
    const results = await settle(batch);

    expect(results.map((r) => r.balanceAfterMicros)).toEqual([
      CREDIT - 100,
      CREDIT - 7,
      CREDIT - 350,
      CREDIT - 400,
    ]);
    const [debitA] = await debitsOf(a);
    expect(await debitsOf(a)).toHaveLength(1);
    expect(debitA).toMatchObject({
      idempotency_key: `usage:${batch[0]!.usageId}`,
      description: '3 calls: llm demo-small, llm demo-large',
    });
    expect(Number(debitA!.amount_micros)).toBe(-400);
    expect(Number(debitA!.balance_after_micros)).toBe(CREDIT - 400);
    expect(await walletOf(a)).toBe(CREDIT - 400);
    const [debitB] = await debitsOf(b);
    expect(debitB).toMatchObject({
      idempotency_key: `usage:${batch[1]!.usageId}`,
      description: 'llm demo-small',
    });
    expect(await walletOf(b)).toBe(CREDIT - 7);
    // Every usage row names its tenant's debit, and each debit is the sum of its rows.
    const rows = await store.db
      .selectFrom('usage_events')
      .select(['id', 'ledger_entry_id'])
      .where('tenant_id', '=', a)
      .execute();
    expect(rows.map((row) => Number(row.ledger_entry_id))).toEqual([debitA!.id, debitA!.id, debitA!.id]);
    expect(await mismatchedDebits(store.db, a)).toEqual([]);
    expect(await mismatchedDebits(store.db, b)).toEqual([]);
  });

  it('settles a call whose model the store cannot hold as text (a journal record from before the proxy refused it)', async () => {
    const tenant = await fundedTenant(store, 'batch-bad-text', CREDIT);
    await settle([settlementOf(tenant, 40, { model: 'demo\u0000large\ud800' })]);
    const [usage] = await store.db
      .selectFrom('usage_events')
      .select(['model', 'cost_micros'])
      .where('tenant_id', '=', tenant)
      .execute();
    expect(usage).toMatchObject({ model: 'demo\ufffdlarge\ufffd', cost_micros: 40 });
    expect((await debitsOf(tenant))[0]?.description).toBe('llm demo\ufffdlarge\ufffd');
    expect(await walletOf(tenant)).toBe(CREDIT - 40);
  });

  it('refuses a call settled before on a first attempt, and its retry bills only the new calls', async () => {
    const tenant = await fundedTenant(store, 'batch-retry', CREDIT);
    const earlier = settlementOf(tenant, 100);
    await settle([earlier]);
    const later = settlementOf(tenant, 30);
    // A first attempt vouches its usage ids are new: the repeated one aborts the whole batch.
    await expect(settle([later, earlier])).rejects.toThrow();
    expect(await walletOf(tenant)).toBe(CREDIT - 100);

    const results = await settle([later, earlier, later], false);
    expect(results.map((r) => r.balanceAfterMicros)).toEqual([CREDIT - 130, CREDIT - 100, CREDIT - 130]);
    expect(await walletOf(tenant)).toBe(CREDIT - 130);
    const debits = await debitsOf(tenant);
    expect(debits.map((d) => Number(d.amount_micros))).toEqual([-100, -30]);
    expect(await mismatchedDebits(store.db, tenant)).toEqual([]);

    // A batch whose calls were all settled before posts nothing at all.
    await settle([earlier, later], false);
    expect(await debitsOf(tenant)).toHaveLength(2);
    expect(await walletOf(tenant)).toBe(CREDIT - 130);
  });
});

describe('debitDescription', () => {
  it('names one call by its model, and several by their count and first three models', () => {
    const call = (model: string | null) => ({ provider: 'llm', model });
    expect(debitDescription([call('a')])).toBe('llm a');
    expect(debitDescription([{ provider: 'search', model: null }])).toBe('search');
    expect(debitDescription([call('a'), call('a')])).toBe('2 calls: llm a');
    expect(debitDescription([call('a'), call('b'), call('c'), call('d')])).toBe(
      '4 calls: llm a, llm b, llm c, …',
    );
  });
});
