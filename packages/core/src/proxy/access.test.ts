import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../../test/support/stores.js';
import { ConnectionResolver } from './access.js';

describe('ConnectionResolver', () => {
  let store: TestStore;
  let tenantId: string;
  const cliKey = () => ({
    keyId: crypto.randomUUID(),
    kind: 'cli' as const,
    tenantId,
    appId: null,
    connectionId: null,
    userId: null,
  });
  const connect = (endUser: string | null) =>
    store.db
      .insertInto('connections')
      .values({
        tenant_id: tenantId,
        provider: 'crm',
        profile: 'user_oauth',
        status: 'connected',
        display_name: 'CRM',
        end_user: endUser,
      })
      .returning('id')
      .executeTakeFirstOrThrow();

  beforeAll(async () => {
    store = await openTestStore();
    tenantId = (
      await store.db.insertInto('tenants').values({ name: 't' }).returning('id').executeTakeFirstOrThrow()
    ).id;
  });
  afterAll(async () => store?.dispose());

  it("never reaches a provider through a host app's user's connection, only the workspace's own", async () => {
    const resolver = new ConnectionResolver(store.db, 0);
    await connect('alice');
    expect(await resolver.connectionFor(cliKey(), 'crm')).toBeNull();
    const own = await connect(null);
    expect(await resolver.connectionFor(cliKey(), 'crm')).toBe(own.id);
  });
});
