import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { ensureAccount } from './accounts.js';
import { issueCliKey } from './cli-keys.js';
import { KeyStore } from './key-store.js';

for (const kind of STORE_KINDS) {
  describe(`issueCliKey (${kind})`, () => {
    let store: TestStore;
    let keys: KeyStore;
    beforeAll(async () => {
      store = await openTestStore(kind);
      // A long cache: revocation must evict, not wait for expiry.
      keys = new KeyStore(store.db, { cacheTtlMs: 60_000 });
    });
    afterAll(async () => store?.dispose());

    const liveCliKeys = (userId: string) =>
      store.db
        .selectFrom('api_keys')
        .select('id')
        .where('user_id', '=', userId)
        .where('kind', '=', 'cli')
        .where('revoked_at', 'is', null)
        .execute();

    it('mints a tenant-scoped CLI key linked to the user', async () => {
      const account = await ensureAccount(store.db, { subject: 'cli-1', email: 'cli-1@example.test' });
      const issued = await issueCliKey(store.db, keys, account);
      expect(issued.apiKey).toMatch(/^service_sk_[\w-]{43}$/);
      expect(issued.revokedKeyIds).toEqual([]);
      expect(await keys.authenticate(issued.apiKey)).toEqual({
        keyId: issued.keyId,
        kind: 'cli',
        tenantId: account.tenantId,
        appId: null,
        connectionId: null,
        userId: account.userId,
      });
    });

    it('revokes the previous CLI key at once, even while it sits in the key cache', async () => {
      const account = await ensureAccount(store.db, { subject: 'cli-2', email: 'cli-2@example.test' });
      const first = await issueCliKey(store.db, keys, account);
      expect(await keys.authenticate(first.apiKey)).not.toBeNull();
      const second = await issueCliKey(store.db, keys, account);
      expect(second.revokedKeyIds).toEqual([first.keyId]);
      expect(await keys.authenticate(first.apiKey)).toBeNull();
      expect(await keys.authenticate(second.apiKey)).not.toBeNull();
    });

    it("leaves the account's other keys and other accounts' CLI keys alone", async () => {
      const mine = await ensureAccount(store.db, { subject: 'cli-3', email: 'cli-3@example.test' });
      const theirs = await ensureAccount(store.db, { subject: 'cli-4', email: 'cli-4@example.test' });
      const app = await store.db
        .insertInto('apps')
        .values({ tenant_id: mine.tenantId, slug: 'a', name: 'A' })
        .returning('id')
        .executeTakeFirstOrThrow();
      const appKey = await keys.issue({ tenantId: mine.tenantId, kind: 'app', appId: app.id });
      const theirKey = await issueCliKey(store.db, keys, theirs);
      await issueCliKey(store.db, keys, mine);
      await issueCliKey(store.db, keys, mine);
      expect(await keys.authenticate(appKey.key)).not.toBeNull();
      expect(await keys.authenticate(theirKey.apiKey)).not.toBeNull();
    });

    it('ends with exactly one live CLI key when ten logins race', async () => {
      const account = await ensureAccount(store.db, { subject: 'cli-5', email: 'cli-5@example.test' });
      const issued = await Promise.all(
        Array.from({ length: 10 }, () => issueCliKey(store.db, keys, account)),
      );
      const live = await liveCliKeys(account.userId);
      expect(live).toHaveLength(1);
      const alive = await Promise.all(issued.map((i) => keys.authenticate(i.apiKey)));
      expect(alive.filter(Boolean)).toHaveLength(1);
    });
  });
}
