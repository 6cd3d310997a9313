import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import type { NotificationHandler } from '../store/listener.js';
import { setTenantStatus, TENANT_STATUS_CHANNEL, TenantStatuses } from './tenant-status.js';

for (const kind of STORE_KINDS) {
  describe(`tenant statuses (${kind})`, () => {
    let store: TestStore;
    beforeAll(async () => {
      store = await openTestStore(kind);
    });
    afterAll(async () => store?.dispose());

    const newTenant = async () =>
      (await store.db.insertInto('tenants').values({ name: 't' }).returning('id').executeTakeFirstOrThrow())
        .id;
    /** Changes the status in the store, with no notice any instance hears. */
    const behindTheCache = (tenantId: string, status: 'active' | 'suspended') =>
      store.db.updateTable('tenants').set({ status }).where('id', '=', tenantId).execute();

    it('reads a tenant active or suspended, and an unknown tenant as not suspended', async () => {
      const statuses = new TenantStatuses(store.db);
      const tenantId = await newTenant();
      expect(await statuses.isSuspended(tenantId)).toBe(false);
      expect(await statuses.isSuspended('00000000-0000-4000-8000-000000000000')).toBe(false);
      const suspended = await newTenant();
      await behindTheCache(suspended, 'suspended');
      expect(await statuses.isSuspended(suspended)).toBe(true);
    });

    it('serves the cached status until it expires or is forgotten', async () => {
      let now = 0;
      const statuses = new TenantStatuses(store.db, { cacheTtlMs: 1000, now: () => now });
      const tenantId = await newTenant();
      expect(await statuses.isSuspended(tenantId)).toBe(false);
      await behindTheCache(tenantId, 'suspended');
      expect(await statuses.isSuspended(tenantId)).toBe(false);
      now = 1001;
      expect(await statuses.isSuspended(tenantId)).toBe(true);
      await behindTheCache(tenantId, 'active');
      statuses.forget(tenantId);
      expect(await statuses.isSuspended(tenantId)).toBe(false);
    });

    it('answers the last status read while the store cannot be reached, and only then', async () => {
      let now = 0;
      let failure: Error | null = null;
      // The store as seen through a connection that fails with `failure` while it is set.
      const db = new Proxy(store.db, {
        get(target, property) {
          if (failure && property === 'selectFrom') {
            return () => {
              throw failure;
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const statuses = new TenantStatuses(db, { cacheTtlMs: 1000, now: () => now });
      const tenantId = await newTenant();
      await behindTheCache(tenantId, 'suspended');
      expect(await statuses.isSuspended(tenantId)).toBe(true);
      now = 1500;
      failure = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      expect(await statuses.isSuspended(tenantId)).toBe(true);
      // A store that answers with an error is not second-guessed.
      failure = Object.assign(new Error('permission denied'), { code: '42501' });
      await expect(statuses.isSuspended(tenantId)).rejects.toThrow('permission denied');
      // Past the bound (4 s beyond its lifetime), the outage stands.
      now = 5001;
      failure = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      await expect(statuses.isSuspended(tenantId)).rejects.toThrow('ECONNREFUSED');
    });

    it('changes a status once, telling every follower on commit', async () => {
      const tenantId = await newTenant();
      const heard: Array<string | null> = [];
      const statuses = new TenantStatuses(store.db, { cacheTtlMs: 60_000 });
      const unfollow = await statuses.follow({
        listen: (channel, handler) =>
          store.listen(channel, (payload) => {
            heard.push(payload);
            handler(payload);
          }),
      });
      try {
        expect(await statuses.isSuspended(tenantId)).toBe(false);
        expect(
          await store.db.transaction().execute((trx) => setTenantStatus(trx, tenantId, 'suspended')),
        ).toBe(true);
        expect(
          await store.db.transaction().execute((trx) => setTenantStatus(trx, tenantId, 'suspended')),
        ).toBe(false);
        const deadline = Date.now() + 2000;
        while (!heard.includes(tenantId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        expect(heard).toEqual([tenantId]);
        expect(await statuses.isSuspended(tenantId)).toBe(true);
      } finally {
        await unfollow();
      }
    });

    it('forgets every cached status when notices may have been missed (the listener was away)', async () => {
      let handler: NotificationHandler | undefined;
      const statuses = new TenantStatuses(store.db, { cacheTtlMs: 60_000 });
      await statuses.follow({
        listen: async (channel, next) => {
          expect(channel).toBe(TENANT_STATUS_CHANNEL);
          handler = next;
          return async () => {};
        },
      });
      const tenantId = await newTenant();
      expect(await statuses.isSuspended(tenantId)).toBe(false);
      await behindTheCache(tenantId, 'suspended');
      expect(await statuses.isSuspended(tenantId)).toBe(false);
      handler!(null);
      expect(await statuses.isSuspended(tenantId)).toBe(true);
    });

    it('does not cache what a read saw before a change it overlapped was heard', async () => {
      const statuses = new TenantStatuses(store.db, { cacheTtlMs: 60_000 });
      const tenantId = await newTenant();
      const read = statuses.isSuspended(tenantId);
      // The notice arrives while the read's query is under way.
      statuses.forget(tenantId);
      expect(await read).toBe(false);
      await behindTheCache(tenantId, 'suspended');
      expect(await statuses.isSuspended(tenantId)).toBe(true);
    });
  });
}
