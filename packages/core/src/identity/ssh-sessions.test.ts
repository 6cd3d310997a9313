import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { ensureAccount } from './accounts.js';
import { KeyStore } from './key-store.js';
import { SSH_TOKEN_TTL_MS, SshSessionStore } from './ssh-sessions.js';

for (const kind of STORE_KINDS) {
  describe(`SshSessionStore (${kind})`, () => {
    let store: TestStore;
    let clock = Date.UTC(2030, 0, 1);
    let sessions: SshSessionStore;
    let input: { tenantId: string; appId: string; userId: string; keyId: string };

    beforeAll(async () => {
      store = await openTestStore(kind);
      sessions = new SshSessionStore(store.db, () => clock);
      const account = await ensureAccount(store.db, { subject: 'ssh-1', email: 'ssh@example.test' });
      const app = await store.db
        .insertInto('apps')
        .values({ tenant_id: account.tenantId, slug: 'web', name: 'Web' })
        .returning('id')
        .executeTakeFirstOrThrow();
      const key = await new KeyStore(store.db).issue({
        tenantId: account.tenantId,
        kind: 'cli',
        userId: account.userId,
      });
      input = { tenantId: account.tenantId, appId: app.id, userId: account.userId, keyId: key.id };
    });
    afterAll(async () => store?.dispose());

    it('stores only the hash of the token, and claims it once', async () => {
      const started = await sessions.start(input);
      expect(started.token).toMatch(/^service_ssh_[\w-]{43}$/);
      expect(started.expiresAt.getTime()).toBe(clock + SSH_TOKEN_TTL_MS);
      const rows = await store.db.selectFrom('ssh_sessions').selectAll().execute();
      expect(JSON.stringify(rows)).not.toContain(started.token);
      expect(await sessions.claim(started.token)).toEqual({
        sessionId: started.sessionId,
        tenantId: input.tenantId,
        appId: input.appId,
        appSlug: 'web',
        userId: input.userId,
        email: 'ssh@example.test',
      });
      expect(await sessions.claim(started.token)).toBeNull();
    });

    it('refuses a token after its minute is up', async () => {
      const started = await sessions.start(input);
      clock += SSH_TOKEN_TTL_MS;
      expect(await sessions.claim(started.token)).toBeNull();
    });

    it('gives exactly one claim when many race', async () => {
      const started = await sessions.start(input);
      const claims = await Promise.all(Array.from({ length: 8 }, () => sessions.claim(started.token)));
      expect(claims.filter(Boolean)).toHaveLength(1);
    });

    it('refuses malformed and unknown tokens without a lookup error', async () => {
      for (const token of [
        '',
        'service_ssh_short',
        `service_sk_${'a'.repeat(43)}`,
        `service_ssh_${'a'.repeat(43)}`,
      ]) {
        expect(await sessions.claim(token)).toBeNull();
      }
    });

    it('refuses a token whose CLI key was rotated out, and takes one still in its overlap', async () => {
      const key = await new KeyStore(store.db).issue({
        tenantId: input.tenantId,
        kind: 'cli',
        userId: input.userId,
      });
      const withKey = { ...input, keyId: key.id };
      const overlapEndsAt = (at: number) =>
        store.db
          .updateTable('api_keys')
          .set({ expires_at: new Date(at) })
          .where('id', '=', key.id)
          .execute();
      await overlapEndsAt(clock + 1000);
      expect(await sessions.claim((await sessions.start(withKey)).token)).not.toBeNull();
      await overlapEndsAt(clock);
      expect(await sessions.claim((await sessions.start(withKey)).token)).toBeNull();
    });

    it('sweeps expired sessions', async () => {
      await sessions.start(input);
      clock += 2 * SSH_TOKEN_TTL_MS;
      await sessions.sweep(new Date(clock));
      expect(await store.db.selectFrom('ssh_sessions').select('id').execute()).toEqual([]);
    });
  });
}
