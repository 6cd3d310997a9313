import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { ensureAccount } from './accounts.js';

for (const kind of STORE_KINDS) {
  describe(`ensureAccount (${kind})`, () => {
    let store: TestStore;
    beforeAll(async () => {
      store = await openTestStore(kind);
    });
    afterAll(async () => store?.dispose());

    /** Every row that belongs to one IdP subject. */
    const rowsOf = async (subject: string) => {
      const users = await store.db
        .selectFrom('users')
        .selectAll()
        .where('idp_subject', '=', subject)
        .execute();
      const userIds = users.map((u) => u.id);
      const memberships = userIds.length
        ? await store.db.selectFrom('memberships').selectAll().where('user_id', 'in', userIds).execute()
        : [];
      const tenantIds = memberships.map((m) => m.tenant_id);
      const tenants = tenantIds.length
        ? await store.db.selectFrom('tenants').selectAll().where('id', 'in', tenantIds).execute()
        : [];
      const wallets = tenantIds.length
        ? await store.db.selectFrom('wallets').selectAll().where('tenant_id', 'in', tenantIds).execute()
        : [];
      return { users, memberships, tenants, wallets };
    };

    it('creates a user, their own tenant, an owner membership and an empty wallet on first sight', async () => {
      const account = await ensureAccount(store.db, {
        subject: 'sub-first',
        email: 'ada@example.test',
        name: 'Ada',
      });
      const rows = await rowsOf('sub-first');
      expect(rows.users).toHaveLength(1);
      expect(rows.users[0]).toMatchObject({
        id: account.userId,
        email: 'ada@example.test',
        name: 'Ada',
        default_tenant_id: account.tenantId,
      });
      expect(rows.memberships).toEqual([
        expect.objectContaining({ tenant_id: account.tenantId, user_id: account.userId, role: 'owner' }),
      ]);
      expect(rows.tenants).toEqual([expect.objectContaining({ id: account.tenantId, status: 'active' })]);
      expect(rows.tenants[0]?.name).toBe("Ada's workspace");
      expect(rows.wallets).toEqual([expect.objectContaining({ tenant_id: account.tenantId })]);
      expect(Number(rows.wallets[0]?.balance_micros)).toBe(0);
    });

    it('returns the same user and tenant on later calls without creating anything', async () => {
      const first = await ensureAccount(store.db, { subject: 'sub-again', email: 'b@example.test' });
      const tenantsBefore = await store.db.selectFrom('tenants').select('id').execute();
      const second = await ensureAccount(store.db, { subject: 'sub-again', email: 'b@example.test' });
      expect(second).toEqual(first);
      expect(await store.db.selectFrom('tenants').select('id').execute()).toHaveLength(tenantsBefore.length);
      const rows = await rowsOf('sub-again');
      expect(rows.users).toHaveLength(1);
      expect(rows.memberships).toHaveLength(1);
      expect(rows.wallets).toHaveLength(1);
    });

    it('follows a changed email address and keeps the stored one when a token has none', async () => {
      const account = await ensureAccount(store.db, { subject: 'sub-email', email: 'old@example.test' });
      await ensureAccount(store.db, { subject: 'sub-email', email: 'new@example.test' });
      await ensureAccount(store.db, { subject: 'sub-email', email: null });
      const user = await store.db
        .selectFrom('users')
        .select('email')
        .where('id', '=', account.userId)
        .executeTakeFirstOrThrow();
      expect(user.email).toBe('new@example.test');
    });

    it('names the workspace after the email when the identity has no name', async () => {
      const account = await ensureAccount(store.db, { subject: 'sub-noname', email: 'grace@example.test' });
      const tenant = await store.db
        .selectFrom('tenants')
        .select('name')
        .where('id', '=', account.tenantId)
        .executeTakeFirstOrThrow();
      expect(tenant.name).toBe("grace's workspace");
    });

    it('keeps only readable text of an identity’s name: no control or bidi controls, at most 100 characters', async () => {
      const spoof = await ensureAccount(store.db, {
        subject: 'sub-spoof',
        email: 'eve@example.test',
        name: 'Eve\u202e\u001b[31m Admin',
      });
      const named = (id: string) =>
        store.db.selectFrom('tenants').select('name').where('id', '=', id).executeTakeFirstOrThrow();
      expect((await named(spoof.tenantId)).name).toBe("Eve[31m Admin's workspace");
      const user = await store.db
        .selectFrom('users')
        .select('name')
        .where('id', '=', spoof.userId)
        .executeTakeFirstOrThrow();
      expect(user.name).toBe('Eve[31m Admin');
      // A long name is cut on characters (an emoji is never halved), the workspace's within 100.
      const long = await ensureAccount(store.db, { subject: 'sub-long', name: '😀'.repeat(150) });
      const name = (await named(long.tenantId)).name;
      expect(Array.from(name)).toHaveLength(100);
      expect(name).toBe(`${'😀'.repeat(88)}'s workspace`);
      // Nothing readable left: the email names it.
      const blank = await ensureAccount(store.db, {
        subject: 'sub-blank',
        email: 'bo@example.test',
        name: '\u2066 ',
      });
      expect((await named(blank.tenantId)).name).toBe("bo's workspace");
    });

    it('ends with one user and one tenant when 20 requests race on a new subject', async () => {
      const claims = { subject: 'sub-race', email: 'race@example.test' };
      const results = await Promise.all(Array.from({ length: 20 }, () => ensureAccount(store.db, claims)));
      expect(new Set(results.map((r) => r.userId)).size).toBe(1);
      expect(new Set(results.map((r) => r.tenantId)).size).toBe(1);
      const rows = await rowsOf('sub-race');
      expect(rows.users).toHaveLength(1);
      expect(rows.memberships).toHaveLength(1);
      expect(rows.tenants).toHaveLength(1);
      expect(rows.wallets).toHaveLength(1);
      // No orphan tenant was left behind by a losing racer.
      const orphans = await store.db
        .selectFrom('tenants')
        .leftJoin('memberships', 'memberships.tenant_id', 'tenants.id')
        .select('tenants.id')
        .where('memberships.tenant_id', 'is', null)
        .execute();
      expect(orphans).toEqual([]);
    });
  });
}
