/**
 * Test kit of the settlement suites: a tenant with credit, and settlements of a call to the demo
 * model as the proxy would hand them to billing.
 */
import { randomUUID } from 'node:crypto';
import { post } from '../../src/billing/ledger.js';
import type { Settlement } from '../../src/billing/settlement.js';
import type { Store } from '../../src/store/index.js';

/** A new tenant granted `creditMicros`; its id. */
export async function fundedTenant(
  store: Pick<Store, 'db'>,
  name: string,
  creditMicros: number,
): Promise<string> {
  const { id } = await store.db
    .insertInto('tenants')
    .values({ name })
    .returning('id')
    .executeTakeFirstOrThrow();
  await post(store.db, { tenantId: id, amountMicros: creditMicros, kind: 'grant', idempotencyKey: 'seed' });
  return id;
}

/** One answered call of `tenantId` costing `costMicros` (a fresh usage id unless given). */
export function settlementOf(
  tenantId: string,
  costMicros: number,
  fields: Partial<Settlement> = {},
): Settlement {
  return {
    usageId: randomUUID(),
    tenantId,
    appId: null,
    connectionId: null,
    keyId: null,
    provider: 'llm',
    model: 'demo-small',
    quantities: { call: 1 },
    meterCosts: {},
    costMicros,
    estimated: false,
    upstreamStatus: 200,
    requestId: null,
    holdMicros: costMicros,
    leaseId: null,
    ...fields,
  };
}
