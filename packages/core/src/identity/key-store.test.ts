import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastStaleCallAfter } from '../../test/support/propagation.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import type { NotificationHandler } from '../store/listener.js';
import { KEYS_CHANNEL, KeyStore } from './key-store.js';
import { hashSecret, isWellFormedKey } from './keys.js';

for (const kind of STORE_KINDS) {
  describe(`key store (${kind})`, () => {
    let store: TestStore;
    let tenantId: string;
    let appId: string;
    beforeAll(async () => {
      store = await openTestStore(kind);
      tenantId = (
        await store.db
          .insertInto('tenants')
          .values({ name: 'keys' })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
      appId = (
        await store.db
          .insertInto('apps')
          .values({ tenant_id: tenantId, slug: 'a', name: 'A' })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    });
    afterAll(async () => store?.dispose());

    it('issues service_sk_ keys stored only as SHA-256 hashes with a 12-character prefix', async () => {
      const keys = new KeyStore(store.db);
      const issued = await keys.issue({ tenantId, kind: 'app', appId });
      expect(isWellFormedKey(issued.key)).toBe(true);
      expect(issued.key).toHaveLength('service_sk_'.length + 43);
      const row = await store.db
        .selectFrom('api_keys')
        .selectAll()
        .where('id', '=', issued.id)
        .executeTakeFirstOrThrow();
      expect(row.key_hash).toBe(hashSecret(issued.key));
      expect(row.prefix).toBe(issued.key.slice(0, 16));
      expect(JSON.stringify(row)).not.toContain(issued.key);
    });

    it('authenticates a live key to its tenant and scope', async () => {
      const keys = new KeyStore(store.db);
      const issued = await keys.issue({ tenantId, kind: 'app', appId });
      expect(await keys.authenticate(issued.key)).toEqual({
        keyId: issued.id,
        kind: 'app',
        tenantId,
        appId,
        connectionId: null,
        userId: null,
      });
      expect(await keys.authenticate(`${issued.key.slice(0, -1)}x`)).toBeNull();
      expect(await keys.authenticate('not-a-key')).toBeNull();
    });

    it('honours a revocation at once on the revoking instance', async () => {
      const keys = new KeyStore(store.db);
      const issued = await keys.issue({ tenantId, kind: 'app', appId });
      expect(await keys.authenticate(issued.key)).not.toBeNull();
      expect(await keys.revoke(issued.id)).toBe(true);
      expect(await keys.authenticate(issued.key)).toBeNull();
      expect(await keys.revoke(issued.id)).toBe(false);
    });

    it('honours a revocation made by another instance once the cache entry expires', async () => {
      let now = 1_000_000;
      const here = new KeyStore(store.db, { cacheTtlMs: 2000, now: () => now });
      const elsewhere = new KeyStore(store.db);
      const issued = await here.issue({ tenantId, kind: 'app', appId });
      expect(await here.authenticate(issued.key)).not.toBeNull();
      await elsewhere.revoke(issued.id);
      now += 2001;
      expect(await here.authenticate(issued.key)).toBeNull();
    });

    it('drops a key another instance revokes as its notice arrives, long before the cache would', async () => {
      const here = new KeyStore(store.db, { cacheTtlMs: 60_000 });
      const unfollow = await here.follow(store);
      try {
        const elsewhere = new KeyStore(store.db);
        const issued = await here.issue({ tenantId, kind: 'app', appId });
        expect(await here.authenticate(issued.key)).not.toBeNull();
        await elsewhere.revoke(issued.id);
        const stillAccepted = await lastStaleCallAfter(
          async () => (await here.authenticate(issued.key)) === null,
          true,
          1000,
        );
        expect(stillAccepted).toBeLessThan(100);
      } finally {
        await unfollow();
      }
    });

    it('forgets every cached key when notices may have been missed (the listener was away)', async () => {
      let handler: NotificationHandler | undefined;
      const keys = new KeyStore(store.db, { cacheTtlMs: 60_000 });
      await keys.follow({
        listen: async (channel, next) => {
          expect(channel).toBe(KEYS_CHANNEL);
          handler = next;
          return async () => {};
        },
      });
      const issued = await keys.issue({ tenantId, kind: 'app', appId });
      expect(await keys.authenticate(issued.key)).not.toBeNull();
      // Revoked behind the cache's back, with no notice this instance heard.
      await store.db
        .updateTable('api_keys')
        .set({ revoked_at: new Date() })
        .where('id', '=', issued.id)
        .execute();
      expect(await keys.authenticate(issued.key)).not.toBeNull();
      handler!(null);
      expect(await keys.authenticate(issued.key)).toBeNull();
    });

    it('does not cache what a lookup read before a revocation it overlapped was heard', async () => {
      const keys = new KeyStore(store.db, { cacheTtlMs: 60_000 });
      const issued = await keys.issue({ tenantId, kind: 'app', appId });
      const lookup = keys.authenticate(issued.key);
      // The notice arrives while the lookup's query is under way.
      keys.forget([issued.id]);
      expect(await lookup).not.toBeNull();
      await store.db
        .updateTable('api_keys')
        .set({ revoked_at: new Date() })
        .where('id', '=', issued.id)
        .execute();
      expect(await keys.authenticate(issued.key)).toBeNull();
    });

    it('never serves a key from the cache past the end of its rotation overlap', async () => {
      let now = Date.now();
      const keys = new KeyStore(store.db, { cacheTtlMs: 60_000, now: () => now });
      const issued = await keys.issue({ tenantId, kind: 'app', appId });
      await store.db
        .updateTable('api_keys')
        .set({ expires_at: new Date(now + 1000) })
        .where('id', '=', issued.id)
        .execute();
      expect(await keys.authenticate(issued.key)).not.toBeNull();
      now += 999;
      expect(await keys.authenticate(issued.key)).not.toBeNull();
      now += 2;
      expect(await keys.authenticate(issued.key)).toBeNull();
    });

    it('tells its listeners of a key again as its rotation overlap ends, from a lookup or a notice', async () => {
      let handler: NotificationHandler | undefined;
      const keys = new KeyStore(store.db);
      await keys.follow({
        listen: async (_channel, next) => {
          handler = next;
          return async () => {};
        },
      });
      const told: string[] = [];
      keys.onForget((ids) => told.push(...(ids ?? ['all'])));
      const [seen, heard] = [
        await keys.issue({ tenantId, kind: 'app', appId }),
        await keys.issue({ tenantId, kind: 'app', appId }),
      ];
      const ends = new Date(Date.now() + 300);
      await store.db
        .updateTable('api_keys')
        .set({ expires_at: ends })
        .where('id', 'in', [seen.id, heard.id])
        .execute();
      // One instance looks the key up in its overlap; another hears the rotation's notice.
      expect(await keys.authenticate(seen.key)).not.toBeNull();
      handler!(`${heard.id} ${ends.getTime()}`);
      expect(told).toEqual([heard.id]);
      await new Promise((resolve) => setTimeout(resolve, ends.getTime() - Date.now() + 50));
      expect(told.sort()).toEqual([heard.id, heard.id, seen.id].sort());
    });

    it('refuses to revoke a key of another tenant', async () => {
      const keys = new KeyStore(store.db);
      const issued = await keys.issue({ tenantId, kind: 'app', appId });
      const other = (
        await store.db
          .insertInto('tenants')
          .values({ name: 'other' })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
      expect(await keys.revoke(issued.id, other)).toBe(false);
      expect(await keys.authenticate(issued.key)).not.toBeNull();
    });

    it('records last use at most once per interval', async () => {
      let now = Date.now();
      const keys = new KeyStore(store.db, { cacheTtlMs: 0, touchIntervalMs: 60_000, now: () => now });
      const issued = await keys.issue({ tenantId, kind: 'app', appId });
      await keys.authenticate(issued.key);
      const lastUsed = async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        return (
          await store.db
            .selectFrom('api_keys')
            .select('last_used_at')
            .where('id', '=', issued.id)
            .executeTakeFirstOrThrow()
        ).last_used_at;
      };
      const first = await lastUsed();
      expect(first).not.toBeNull();
      now += 1000;
      await keys.authenticate(issued.key);
      expect((await lastUsed())?.getTime()).toBe(first?.getTime());
      now += 60_000;
      await keys.authenticate(issued.key);
      expect((await lastUsed())?.getTime()).toBeGreaterThan(first!.getTime());
    });

    it('requires the scope that matches the kind', async () => {
      const keys = new KeyStore(store.db);
      await expect(keys.issue({ tenantId, kind: 'app' })).rejects.toThrow();
      await expect(keys.issue({ tenantId, kind: 'connection' })).rejects.toThrow();
      await expect(keys.issue({ tenantId, kind: 'cli' })).rejects.toThrow();
    });
  });
}

describe('hashSecret', () => {
  it('is SHA-256 of the UTF-8 text in lowercase hex', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashSecret('ünï\u{1F600}')).toBe(
      createHash('sha256').update('ünï\u{1F600}', 'utf8').digest('hex'),
    );
  });
});
