import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { ensureAccount } from './accounts.js';
import { hashSecret } from './keys.js';
import { SESSION_COOKIE, SESSION_TTL_MS, SessionStore } from './sessions.js';

for (const kind of STORE_KINDS) {
  describe(`SessionStore (${kind})`, () => {
    let store: TestStore;
    let userId: string;
    let tenantId: string;
    beforeAll(async () => {
      store = await openTestStore(kind);
      ({ userId, tenantId } = await ensureAccount(store.db, {
        subject: 'idp-subject-1',
        email: 'ada@example.test',
      }));
    });
    afterAll(async () => store?.dispose());

    it('names its cookie service_session and lasts seven days', () => {
      expect(SESSION_COOKIE).toBe('service_session');
      expect(SESSION_TTL_MS).toBe(7 * 24 * 60 * 60 * 1000);
    });

    it('creates a session that resolves to its user, subject, email and tenant', async () => {
      const sessions = new SessionStore(store.db);
      const { token, expiresAt } = await sessions.create(userId);
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(expiresAt.getTime()).toBeGreaterThan(Date.now() + SESSION_TTL_MS - 60_000);
      expect(await sessions.resolve(token)).toEqual({
        sessionId: expect.any(String),
        userId,
        subject: 'idp-subject-1',
        email: 'ada@example.test',
        tenantId,
      });
    });

    it('gives each session its own value', async () => {
      const sessions = new SessionStore(store.db);
      const a = await sessions.create(userId);
      const b = await sessions.create(userId);
      expect(a.token).not.toBe(b.token);
      await sessions.destroy(a.token);
      expect(await sessions.resolve(a.token)).toBeNull();
      expect(await sessions.resolve(b.token)).not.toBeNull();
    });

    it('resolves nothing for missing, unknown, altered or oversized values', async () => {
      const sessions = new SessionStore(store.db);
      const { token } = await sessions.create(userId);
      for (const value of [
        undefined,
        '',
        'unknown',
        `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`,
      ]) {
        expect(await sessions.resolve(value)).toBeNull();
      }
      expect(await sessions.resolve('x'.repeat(10_000))).toBeNull();
    });

    it('destroys a session, and ignores unknown or missing values', async () => {
      const sessions = new SessionStore(store.db);
      const { token } = await sessions.create(userId);
      await sessions.destroy(token);
      expect(await sessions.resolve(token)).toBeNull();
      await expect(sessions.destroy(token)).resolves.toBeUndefined();
      await expect(sessions.destroy('never-issued')).resolves.toBeUndefined();
      await expect(sessions.destroy(undefined)).resolves.toBeUndefined();
    });

    it('expires a session after seven days', async () => {
      let now = Date.now();
      const sessions = new SessionStore(store.db, () => now);
      const { token, expiresAt } = await sessions.create(userId);
      expect(expiresAt.getTime()).toBe(now + SESSION_TTL_MS);
      now += SESSION_TTL_MS - 1000;
      expect(await sessions.resolve(token)).not.toBeNull();
      now += 1000;
      expect(await sessions.resolve(token)).toBeNull();
    });

    it('stores only a SHA-256 hash of the cookie value', async () => {
      const sessions = new SessionStore(store.db);
      const { token } = await sessions.create(userId);
      const rows = await store.db.selectFrom('sessions').selectAll().execute();
      expect(rows.map((r) => r.token_hash)).toContain(hashSecret(token));
      expect(JSON.stringify(rows)).not.toContain(token);
    });
  });
}
