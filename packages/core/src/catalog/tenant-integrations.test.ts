import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../test/support/stores.js';
import { ensureAccount } from '../identity/accounts.js';
import type { ConnectionStatus } from '../store/database.js';
import type { Store } from '../store/index.js';
import { BYOK_STATIC_PROFILE, tenantIntegrationStates } from './tenant-integrations.js';

describe('tenantIntegrationStates', () => {
  let store: Store;
  let tenantId: string;
  let otherTenant: string;

  beforeAll(async () => {
    store = await openMemoryStore();
    const { db } = store;
    for (const [provider, kind] of [
      ['gw', 'llm_gateway'],
      ['search', 'service'],
      ['speech', 'speech_synthesis'],
    ] as const) {
      await db.insertInto('integrations').values({ provider, name: provider, kind }).execute();
    }
    tenantId = (await ensureAccount(db, { subject: 'a', email: 'a@example.com' })).tenantId;
    otherTenant = (await ensureAccount(db, { subject: 'b', email: 'b@example.com' })).tenantId;
  });
  afterAll(() => store.close());

  const connect = (
    tenant: string,
    provider: string,
    profile: string,
    status: ConnectionStatus = 'connected',
  ) =>
    store.db
      .insertInto('connections')
      .values({ tenant_id: tenant, provider, profile, status, display_name: provider })
      .execute();

  it('reads nothing enabled for a tenant with no switches and no connections', async () => {
    const states = await tenantIntegrationStates(store.db, tenantId);
    expect([...states.values()].map((s) => [s.provider, s.tenantEnabled, s.provisioned]).sort()).toEqual([
      ['gw', false, false],
      ['search', false, false],
      ['speech', false, false],
    ]);
  });

  it("counts a connected connection as enabled; the gateway's choice only with a static own key", async () => {
    await connect(tenantId, 'search', 'vendo_managed_pool');
    await connect(tenantId, 'gw', 'vendo_managed_pool');
    let states = await tenantIntegrationStates(store.db, tenantId);
    expect(states.get('search')).toMatchObject({ tenantEnabled: true, chosen: true, provisioned: true });
    expect(states.get('gw')).toMatchObject({ tenantEnabled: true, chosen: false, provisioned: true });
    await connect(tenantId, 'gw', BYOK_STATIC_PROFILE);
    states = await tenantIntegrationStates(store.db, tenantId);
    expect(states.get('gw')).toMatchObject({ tenantEnabled: true, chosen: true, provisioned: true });
    // Another tenant's connections count for nothing here.
    await connect(otherTenant, 'speech', 'vendo_managed_pool');
    expect((await tenantIntegrationStates(store.db, tenantId)).get('speech')?.tenantEnabled).toBe(false);
  });

  it('lets an explicit switch win over connections, both ways', async () => {
    await store.db
      .insertInto('tenant_integrations')
      .values([
        { tenant_id: tenantId, provider: 'search', enabled: false },
        { tenant_id: tenantId, provider: 'speech', enabled: true },
      ])
      .execute();
    const states = await tenantIntegrationStates(store.db, tenantId);
    expect(states.get('search')).toMatchObject({ tenantEnabled: false, provisioned: true });
    expect(states.get('speech')).toMatchObject({ tenantEnabled: true, provisioned: false });
  });

  it('ignores connections that are not connected', async () => {
    const fresh = (await ensureAccount(store.db, { subject: 'c', email: 'c@example.com' })).tenantId;
    await connect(fresh, 'search', 'vendo_managed_pool', 'revoked');
    expect((await tenantIntegrationStates(store.db, fresh)).get('search')).toMatchObject({
      tenantEnabled: false,
      provisioned: false,
    });
  });
});
