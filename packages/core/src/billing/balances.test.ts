import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../test/support/stores.js';
import { BalanceReader } from './balances.js';
import { post } from './ledger.js';

describe('BalanceReader', () => {
  let store: TestStore;
  let tenantId: string;
  let now = 0;
  beforeAll(async () => {
    store = await openTestStore();
    tenantId = (
      await store.db.insertInto('tenants').values({ name: 't' }).returning('id').executeTakeFirstOrThrow()
    ).id;
    await post(store.db, { tenantId, amountMicros: 1_000, kind: 'grant', idempotencyKey: 'a' });
  });
  afterAll(async () => store?.dispose());

  it('serves a balance from memory for the TTL, then reads the store again', async () => {
    const reader = new BalanceReader(store.db, { ttlMs: 1000, now: () => now });
    expect(await reader.micros(tenantId)).toBe(1_000);
    await post(store.db, { tenantId, amountMicros: 500, kind: 'grant', idempotencyKey: 'b' });
    now += 999;
    expect(await reader.micros(tenantId)).toBe(1_000);
    now += 1;
    expect(await reader.micros(tenantId)).toBe(1_500);
  });

  it('reads the store at once after an invalidation', async () => {
    const reader = new BalanceReader(store.db, { ttlMs: 60_000, now: () => now });
    const before = await reader.micros(tenantId);
    await post(store.db, { tenantId, amountMicros: -200, kind: 'usage', idempotencyKey: 'c' });
    reader.invalidate(tenantId);
    expect(await reader.micros(tenantId)).toBe(before - 200);
  });

  it('answers 0 for a tenant without a wallet', async () => {
    const reader = new BalanceReader(store.db);
    expect(await reader.micros('00000000-0000-4000-8000-000000000000')).toBe(0);
  });

  it('shares one store read among concurrent callers', async () => {
    const reader = new BalanceReader(store.db, { ttlMs: 0 });
    let reads = 0;
    const counting = store.db.withPlugin({
      transformQuery: (args) => {
        reads++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    const shared = new BalanceReader(counting, { ttlMs: 0 });
    const answers = await Promise.all(Array.from({ length: 20 }, () => shared.micros(tenantId)));
    expect(new Set(answers).size).toBe(1);
    expect(reads).toBe(1);
    expect(await reader.micros(tenantId)).toBe(answers[0]);
  });
});
