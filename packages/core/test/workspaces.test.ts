/**
 * The signed-in user's account and workspaces over real HTTP: `/api/user/me`, `/api/tenants/me`,
 * `/api/tenants` and the workspace switch, which every other dashboard route follows.
 *
 * @see docs/api/workspaces.md
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MembershipRole } from '../src/store/database.js';
import {
  type RunningPlatform,
  type SignedInOwner,
  sessionClient,
  signedInOwner,
  startPlatform,
} from './support/platform.js';
import { openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

for (const kind of STORE_KINDS) {
  describe(`workspaces (${kind})`, () => {
    let store: TestStore;
    let server: RunningPlatform;
    let emails = 0;

    beforeAll(async () => {
      store = await openTestStore(kind);
      server = await startPlatform(store);
    });
    afterAll(async () => {
      await server?.close();
      await store?.dispose();
    });

    const owner = (name = 'owner') => signedInOwner(server, `${name}-${++emails}-${kind}@example.test`);
    const call = sessionClient(() => server.url);
    const json = async (response: Response, status: number) => {
      expect(response.status).toBe(status);
      return response.json();
    };
    /** Puts `user` into `ws` with `role` straight in the store (invitations are tested on their own). */
    const addMember = async (user: SignedInOwner, ws: SignedInOwner, role: MembershipRole) => {
      const userId = (await json(await call(user.cookie, 'GET', '/api/user/me'), 200)).user.id;
      await store.db
        .insertInto('memberships')
        .values({ tenant_id: ws.tenantId, user_id: userId, role })
        .execute();
    };

    it('shows and renames the signed-in user', async () => {
      const me = await owner('ada');
      const shown = await call(me.cookie, 'GET', '/api/user/me');
      expect(shown.headers.get('cache-control')).toBe('no-store');
      const { user } = await json(shown, 200);
      expect(user).toEqual({
        id: expect.any(String),
        email: expect.stringMatching(/^ada-/),
        name: null,
        currentTenantId: me.tenantId,
        createdAt: expect.stringMatching(/Z$/),
      });
      const renamed = await json(await call(me.cookie, 'PATCH', '/api/user/me', { name: '  Ada L.  ' }), 200);
      expect(renamed.user).toMatchObject({ id: user.id, name: 'Ada L.' });
      expect((await json(await call(me.cookie, 'GET', '/api/user/me'), 200)).user.name).toBe('Ada L.');
      const cleared = await json(await call(me.cookie, 'PATCH', '/api/user/me', { name: null }), 200);
      expect(cleared.user.name).toBeNull();
    });

    it('shows the current workspace with the caller’s role and lets only owners rename it', async () => {
      const ws = await owner();
      const { tenant } = await json(await call(ws.cookie, 'GET', '/api/tenants/me'), 200);
      expect(tenant).toEqual({
        id: ws.tenantId,
        name: expect.stringContaining('workspace'),
        status: 'active',
        role: 'owner',
        createdAt: expect.stringMatching(/Z$/),
      });
      const renamed = await json(await call(ws.cookie, 'PATCH', '/api/tenants/me', { name: 'Acme' }), 200);
      expect(renamed.tenant).toMatchObject({ id: ws.tenantId, name: 'Acme', role: 'owner' });

      for (const role of ['member', 'viewer'] as const) {
        const teammate = await owner(role);
        await addMember(teammate, ws, role);
        await json(
          await call(teammate.cookie, 'POST', '/api/tenants/switch', { tenantId: ws.tenantId }),
          200,
        );
        const seen = await json(await call(teammate.cookie, 'GET', '/api/tenants/me'), 200);
        expect(seen.tenant).toMatchObject({ id: ws.tenantId, name: 'Acme', role });
        const refused = await call(teammate.cookie, 'PATCH', '/api/tenants/me', { name: 'Mine now' });
        expect(refused.status).toBe(403);
        expect(await refused.json()).toEqual({
          message: 'Forbidden: only workspace owners change the workspace',
          code: 'FORBIDDEN',
        });
      }
      expect((await json(await call(ws.cookie, 'GET', '/api/tenants/me'), 200)).tenant.name).toBe('Acme');
      // A name is read in pages and terminals: control characters are refused.
      for (const name of ['Acme \u001b[31mRED', 'Tab\there', 'C1 \u009b']) {
        const refused = await call(ws.cookie, 'PATCH', '/api/tenants/me', { name });
        expect(refused.status, JSON.stringify(name)).toBe(400);
      }
      expect((await call(ws.cookie, 'POST', '/api/tenants', { name: 'New \u001b]0;x' })).status).toBe(400);
      expect((await call(ws.cookie, 'PATCH', '/api/user/me', { name: 'Me \u0007' })).status).toBe(400);
      // Nor bidi controls, which reorder what follows: "Acme\u202Egnp.exe" reads as "Acmeexe.png".
      for (const control of [
        '\u202a',
        '\u202b',
        '\u202c',
        '\u202d',
        '\u202e',
        '\u2066',
        '\u2067',
        '\u2068',
        '\u2069',
      ]) {
        const name = `Acme${control}gnp.exe`;
        const renamed = await call(ws.cookie, 'PATCH', '/api/tenants/me', { name });
        expect(renamed.status, JSON.stringify(name)).toBe(400);
        expect((await renamed.json()).message).toMatch(/name: must not contain bidirectional text controls/);
      }
      expect((await call(ws.cookie, 'POST', '/api/tenants', { name: 'New \u202e' })).status).toBe(400);
      expect((await call(ws.cookie, 'PATCH', '/api/user/me', { name: 'Me \u2067' })).status).toBe(400);
      expect((await json(await call(ws.cookie, 'GET', '/api/tenants/me'), 200)).tenant.name).toBe('Acme');
    });

    it('lists the user’s workspaces, creates one they own, and switches between them', async () => {
      const me = await owner();
      const other = await owner('other');
      await addMember(me, other, 'viewer');

      const before = await json(await call(me.cookie, 'GET', '/api/tenants'), 200);
      expect(before.currentTenantId).toBe(me.tenantId);
      expect(before.tenants.map((t: { id: string; role: string }) => [t.id, t.role])).toEqual(
        expect.arrayContaining([
          [me.tenantId, 'owner'],
          [other.tenantId, 'viewer'],
        ]),
      );
      expect(before.tenants).toHaveLength(2);

      const created = await json(
        await call(me.cookie, 'POST', '/api/tenants', { name: 'Side project' }),
        201,
      );
      expect(created.tenant).toMatchObject({ name: 'Side project', role: 'owner', status: 'active' });
      const after = await json(await call(me.cookie, 'GET', '/api/tenants'), 200);
      expect(after.tenants).toHaveLength(3);
      expect(after.currentTenantId).toBe(created.tenant.id);
      expect((await json(await call(me.cookie, 'GET', '/api/tenants/me'), 200)).tenant.id).toBe(
        created.tenant.id,
      );

      const switched = await json(
        await call(me.cookie, 'POST', '/api/tenants/switch', { tenantId: other.tenantId }),
        200,
      );
      expect(switched.tenant).toMatchObject({ id: other.tenantId, role: 'viewer' });
      expect((await json(await call(me.cookie, 'GET', '/api/tenants/me'), 200)).tenant.role).toBe('viewer');
      expect((await json(await call(me.cookie, 'GET', '/api/user/me'), 200)).user.currentTenantId).toBe(
        other.tenantId,
      );
    });

    it('makes every dashboard route follow the switch', async () => {
      const me = await owner();
      const created = await json(await call(me.cookie, 'POST', '/api/tenants', { name: 'Second' }), 201);
      const second = created.tenant.id as string;
      // A CLI key minted here belongs to the second workspace.
      const minted = await json(await call(me.cookie, 'POST', '/api/keys', { kind: 'cli' }), 201);
      const inSecond = await json(await call(me.cookie, 'GET', '/api/keys'), 200);
      expect(inSecond.keys.map((k: { id: string }) => k.id)).toEqual([minted.key.id]);
      const row = await store.db
        .selectFrom('api_keys')
        .select('tenant_id')
        .where('id', '=', minted.key.id)
        .executeTakeFirstOrThrow();
      expect(row.tenant_id).toBe(second);

      await json(await call(me.cookie, 'POST', '/api/tenants/switch', { tenantId: me.tenantId }), 200);
      const inFirst = await json(await call(me.cookie, 'GET', '/api/keys'), 200);
      expect(inFirst.keys.map((k: { id: string }) => k.id)).not.toContain(minted.key.id);
      const connections = await json(await call(me.cookie, 'GET', '/api/connections'), 200);
      expect(JSON.stringify(connections)).not.toContain(second);
    });

    it('switches only to a workspace the user is in: anything else is 404', async () => {
      const me = await owner();
      const stranger = await owner('stranger');
      for (const tenantId of [stranger.tenantId, 'not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
        const refused = await call(me.cookie, 'POST', '/api/tenants/switch', { tenantId });
        expect(refused.status).toBe(404);
        expect(await refused.json()).toEqual({ message: 'Workspace not found', code: 'NOT_FOUND' });
      }
      expect((await json(await call(me.cookie, 'GET', '/api/tenants/me'), 200)).tenant.id).toBe(me.tenantId);
    });

    it('answers 401 without a session, on every route', async () => {
      const routes: Array<[string, string, unknown?]> = [
        ['GET', '/api/user/me'],
        ['PATCH', '/api/user/me', { name: 'x' }],
        ['GET', '/api/tenants/me'],
        ['PATCH', '/api/tenants/me', { name: 'x' }],
        ['GET', '/api/tenants'],
        ['POST', '/api/tenants', { name: 'x' }],
        ['POST', '/api/tenants/switch', { tenantId: 'x' }],
        ['GET', '/api/tenants/me/members'],
      ];
      for (const [method, path, body] of routes) {
        for (const cookie of ['', 'service_session=not-a-session']) {
          const response = await call(cookie, method, path, body);
          expect(response.status, `${method} ${path}`).toBe(401);
          expect(response.headers.get('cache-control'), `${method} ${path}`).toBe('no-store');
          expect(await response.json()).toEqual({ message: 'Unauthorized' });
        }
      }
    });

    it('refuses bad input and unsafe cookie writes with a clear 4xx', async () => {
      const me = await owner();
      const bad: Array<[string, string, unknown, string]> = [
        ['PATCH', '/api/user/me', { name: '' }, 'name'],
        ['PATCH', '/api/user/me', { name: 'x'.repeat(101) }, 'name'],
        ['PATCH', '/api/user/me', { name: 'x', email: 'y@z' }, 'email'],
        // An unknown field is named before the required one it was perhaps meant as.
        ['PATCH', '/api/user/me', { email: 'y@z' }, 'Unrecognized key: "email"'],
        ['POST', '/api/tenants', { title: 'x' }, 'Unrecognized key: "title"'],
        ['PATCH', '/api/tenants/me', {}, 'name'],
        ['PATCH', '/api/tenants/me', { name: 42 }, 'name'],
        ['POST', '/api/tenants', { name: '   ' }, 'name'],
        ['POST', '/api/tenants/switch', {}, 'tenantId'],
        ['POST', '/api/tenants/switch', { tenantId: 'x'.repeat(65) }, 'tenantId'],
        ['POST', '/api/tenants', '{"name":', ''],
      ];
      for (const [method, path, body, field] of bad) {
        const response = await call(me.cookie, method, path, body);
        expect(response.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
        const answer = await response.json();
        expect(answer.code).toBe('INVALID_REQUEST');
        expect(answer.message).toContain(field);
      }
      const crossSite = await call(
        me.cookie,
        'POST',
        '/api/tenants',
        { name: 'x' },
        { origin: 'https://evil.example' },
      );
      expect(crossSite.status).toBe(403);
      const notJson = await call(me.cookie, 'PATCH', '/api/user/me', 'name=x', {
        'content-type': 'text/plain',
      });
      expect(notJson.status).toBe(415);
      expect((await json(await call(me.cookie, 'GET', '/api/tenants'), 200)).tenants).toHaveLength(1);
    });
  });
}
