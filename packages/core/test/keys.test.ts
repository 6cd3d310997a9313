/**
 * A workspace's keys over real HTTP: `/api/keys` lists, creates, names, rotates (with an overlap)
 * and revokes App Keys and CLI keys; `DELETE /api/connections/{id}/keys/{keyId}` revokes one
 * Connection Key. Owners only, tenant-scoped, shown once and stored hashed, and a revocation made
 * on one instance is refused on another well inside its key cache's lifetime.
 *
 * @see docs/api/keys.md
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../src/identity/keys.js';
import type { MembershipRole } from '../src/store/database.js';
import type { Store } from '../src/store/index.js';
import { seedProviders } from './support/metered.js';
import {
  type RunningPlatform,
  type SignedInOwner,
  sessionClient,
  signedInOwner,
  signedInTeammate,
  startPlatform,
} from './support/platform.js';
import { lastStaleCallAfter } from './support/propagation.js';
import { openSse } from './support/sse.js';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

/** Generous limits: these tests present many keys, some of them refused on purpose. */
const rateLimits = {
  cliBalance: { limit: 100_000, windowMs: 60_000 },
  failedCredentials: { limit: 100_000, windowMs: 60_000 },
};
/** Far longer than any wait below: a key refused on B in time was dropped by notice, not by expiry. */
const LONG_CACHE_MS = 60_000;
/** The stated bound on a revocation reaching another instance. */
const REVOCATION_BOUND_MS = 100;

for (const kind of STORE_KINDS) {
  describe(`keys (${kind})`, () => {
    let store: TestStore;
    let second: Store | undefined;
    let a: RunningPlatform;
    let b: RunningPlatform;
    let emails = 0;

    beforeAll(async () => {
      store = await openTestStore(kind);
      second = kind === 'postgres' ? await openSecondHandle(store) : undefined;
      a = await startPlatform(store, { rateLimits, keyCacheTtlMs: LONG_CACHE_MS });
      // On Postgres, B is a second instance with its own pool and listener, as a second process.
      b = await startPlatform(second ?? store, { rateLimits, keyCacheTtlMs: LONG_CACHE_MS });
      // Integrations to make connections of; no call goes upstream.
      await seedProviders(a.platform, 'http://127.0.0.1:9');
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await second?.close();
      await store?.dispose();
    });

    const owner = () => signedInOwner(a, `owner-${++emails}-${kind}@example.test`);
    const asUser = sessionClient(() => a.url);
    /** The status a key gets from an endpoint that takes every kind of key. */
    const use = async (server: RunningPlatform, key: string) =>
      (await fetch(`${server.url}/api/cli/balance`, { headers: { authorization: `Bearer ${key}` } })).status;
    const create = async (ws: SignedInOwner, body: Record<string, unknown>) => {
      const response = await asUser(ws.cookie, 'POST', '/api/keys', body);
      expect(response.status).toBe(201);
      return response.json();
    };
    /** Another user signed in and moved into the owner's workspace with `role`. */
    const teammate = (ws: SignedInOwner, role: MembershipRole) =>
      signedInTeammate(a, ws.tenantId, role, `${role}-${++emails}-${kind}@example.test`);
    /** Polls until `server` refuses `key`; resolves to the milliseconds that took. */
    /** How long `server` still let `key` through (start times, see `lastStaleCallAfter`). */
    const refusedWithin = (server: RunningPlatform, key: string, limitMs: number) =>
      lastStaleCallAfter(() => use(server, key), 401, limitMs * 5);

    it('creates App Keys and CLI keys shown once and stored hashed, and lists them without the key', async () => {
      const ws = await owner();
      const app = await create(ws, { kind: 'app', appId: ws.appId, name: 'production' });
      expect(app.apiKey).toMatch(/^service_sk_[A-Za-z0-9_-]{43}$/);
      expect(app.key).toEqual({
        id: expect.any(String),
        kind: 'app',
        name: 'production',
        prefix: app.apiKey.slice(0, 16),
        appId: ws.appId,
        userId: null,
        createdAt: expect.stringMatching(/Z$/),
        lastUsedAt: null,
        expiresAt: null,
      });
      const cli = await create(ws, { kind: 'cli' });
      expect(cli.key).toMatchObject({
        kind: 'cli',
        name: 'service login',
        appId: null,
        userId: expect.any(String),
      });
      expect(await use(a, app.apiKey)).toBe(200);
      expect(await use(b, cli.apiKey)).toBe(200);

      const row = await store.db
        .selectFrom('api_keys')
        .selectAll()
        .where('id', '=', app.key.id)
        .executeTakeFirstOrThrow();
      expect(row.key_hash).toBe(hashSecret(app.apiKey));
      expect(JSON.stringify(row)).not.toContain(app.apiKey);

      const listed = await asUser(ws.cookie, 'GET', '/api/keys');
      expect(listed.status).toBe(200);
      expect(listed.headers.get('cache-control')).toBe('no-store');
      const text = await listed.text();
      expect(text).not.toContain(app.apiKey);
      expect(text).not.toContain(cli.apiKey);
      const { keys } = JSON.parse(text);
      // Newest first; the fixture's own App Key (made before) is listed too.
      expect(keys.map((k: { id: string }) => k.id).slice(0, 2)).toEqual([cli.key.id, app.key.id]);
      expect(keys).toHaveLength(3);
      expect(keys.every((k: { kind: string }) => k.kind === 'app' || k.kind === 'cli')).toBe(true);
    });

    it('lets a new CLI key replace the account’s previous one, as service login does', async () => {
      const ws = await owner();
      const first = await create(ws, { kind: 'cli', name: 'laptop' });
      expect(await use(b, first.apiKey)).toBe(200);
      const next = await create(ws, { kind: 'cli', name: 'desktop' });
      expect(next.revokedKeyIds).toEqual([first.key.id]);
      expect(await use(a, first.apiKey)).toBe(401);
      expect(await refusedWithin(b, first.apiKey, REVOCATION_BOUND_MS)).toBeLessThan(REVOCATION_BOUND_MS);
      expect(await use(a, next.apiKey)).toBe(200);
    });

    it('answers every one of parallel CLI key requests, and leaves the account one live CLI key', async () => {
      const ws = await owner();
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          asUser(ws.cookie, 'POST', '/api/keys', { kind: 'cli', name: 'race' }),
        ),
      );
      expect(answers.map((r) => r.status)).toEqual(Array(8).fill(201));
      const minted = await Promise.all(answers.map((r) => r.json()));
      const live = await Promise.all(minted.map(async (m: { apiKey: string }) => use(a, m.apiKey)));
      expect(live.filter((status) => status === 200)).toHaveLength(1);
      const { keys } = await (await asUser(ws.cookie, 'GET', '/api/keys')).json();
      expect(keys.filter((k: { kind: string }) => k.kind === 'cli')).toHaveLength(1);
    });

    it('names and clears the name of a key', async () => {
      const ws = await owner();
      const { key } = await create(ws, { kind: 'app', appId: ws.appId });
      expect(key.name).toBeNull();
      const named = await asUser(ws.cookie, 'PATCH', `/api/keys/${key.id}`, { name: '  staging  ' });
      expect(named.status).toBe(200);
      expect((await named.json()).key).toMatchObject({ id: key.id, name: 'staging' });
      const cleared = await asUser(ws.cookie, 'PATCH', `/api/keys/${key.id}`, { name: null });
      expect((await cleared.json()).key.name).toBeNull();
    });

    it('revokes a key at once here and within the stated bound on another instance', async () => {
      const ws = await owner();
      const { key, apiKey } = await create(ws, { kind: 'app', appId: ws.appId });
      // Cached on both instances, for far longer than the test waits.
      expect(await use(a, apiKey)).toBe(200);
      expect(await use(b, apiKey)).toBe(200);
      const revoked = await asUser(ws.cookie, 'DELETE', `/api/keys/${key.id}`);
      expect(revoked.status).toBe(200);
      expect(await revoked.json()).toEqual({ id: key.id, revoked: true });
      expect(await use(a, apiKey)).toBe(401);
      expect(await refusedWithin(b, apiKey, REVOCATION_BOUND_MS)).toBeLessThan(REVOCATION_BOUND_MS);
      const listed = await (await asUser(ws.cookie, 'GET', '/api/keys')).json();
      expect(listed.keys.map((k: { id: string }) => k.id)).not.toContain(key.id);
      // Gone: a second revocation, a rename or a rotation find nothing.
      expect((await asUser(ws.cookie, 'DELETE', `/api/keys/${key.id}`)).status).toBe(404);
      expect((await asUser(ws.cookie, 'PATCH', `/api/keys/${key.id}`, { name: 'x' })).status).toBe(404);
      expect((await asUser(ws.cookie, 'POST', `/api/keys/${key.id}/rotate`, {})).status).toBe(404);
    });

    it('rotates a key: the replacement works at once, the old key until the overlap ends, on every instance', async () => {
      const ws = await owner();
      const old = await create(ws, { kind: 'app', appId: ws.appId, name: 'prod' });
      expect(await use(b, old.apiKey)).toBe(200);
      const response = await asUser(ws.cookie, 'POST', `/api/keys/${old.key.id}/rotate`, {
        overlapSeconds: 1,
      });
      expect(response.status).toBe(201);
      const rotated = await response.json();
      expect(rotated.key).toMatchObject({ kind: 'app', appId: ws.appId, name: 'prod', expiresAt: null });
      expect(rotated.key.id).not.toBe(old.key.id);
      expect(rotated.apiKey).not.toBe(old.apiKey);
      expect(rotated.replaced).toMatchObject({ id: old.key.id, expiresAt: expect.any(String) });
      const endsAt = Date.parse(rotated.replaced.expiresAt);
      expect(endsAt - Date.now()).toBeGreaterThan(0);
      expect(endsAt - Date.now()).toBeLessThanOrEqual(1000);
      expect(await use(a, rotated.apiKey)).toBe(200);
      expect(await use(b, rotated.apiKey)).toBe(200);
      expect(await use(a, old.apiKey)).toBe(200);
      expect(await use(b, old.apiKey)).toBe(200);
      const listed = (await (await asUser(ws.cookie, 'GET', '/api/keys')).json()).keys;
      expect(listed.find((k: { id: string }) => k.id === old.key.id)?.expiresAt).toBe(
        rotated.replaced.expiresAt,
      );
      // A key in its overlap is not rotated again: its replacement is.
      const twice = await asUser(ws.cookie, 'POST', `/api/keys/${old.key.id}/rotate`, {});
      expect(twice.status).toBe(409);
      expect(await twice.json()).toEqual({
        message: 'This key was already rotated; rotate its replacement instead',
        code: 'CONFLICT',
      });
      await new Promise((resolve) => setTimeout(resolve, endsAt - Date.now() + 20));
      expect(await use(a, old.apiKey)).toBe(401);
      expect(await use(b, old.apiKey)).toBe(401);
      expect(await use(b, rotated.apiKey)).toBe(200);
      const after = (await (await asUser(ws.cookie, 'GET', '/api/keys')).json()).keys;
      expect(after.map((k: { id: string }) => k.id)).not.toContain(old.key.id);
    });

    it('ends the event streams of a rotated key as its overlap ends, on every instance, not at their next heartbeat', async () => {
      const ws = await owner();
      const old = await create(ws, { kind: 'app', appId: ws.appId });
      const events = (server: RunningPlatform) =>
        openSse(`${server.url}/api/deployments/me/events`, { authorization: `Bearer ${old.apiKey}` });
      // Opened before the rotation on both instances (B learns of it by notice only), and during it.
      const before = [await events(a), await events(b)];
      const rotated = await (
        await asUser(ws.cookie, 'POST', `/api/keys/${old.key.id}/rotate`, { overlapSeconds: 1 })
      ).json();
      const during = await events(a);
      const streams = [...before, during];
      try {
        for (const sse of streams) await sse.waitForComment('connected');
        const endsAt = Date.parse(rotated.replaced.expiresAt);
        // The heartbeat (25 s here) is far off: only the overlap's end can end them this soon.
        const deadline = endsAt + 1000;
        while (streams.some((sse) => !sse.ended) && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        expect(streams.map((sse) => sse.ended)).toEqual([true, true, true]);
        expect(await use(b, old.apiKey)).toBe(401);
      } finally {
        for (const sse of streams) sse.close();
      }
    });

    it("leaves another owner's CLI key to them to rotate (403), and lets any owner revoke it", async () => {
      const ws = await owner();
      const other = await teammate(ws, 'owner');
      const theirs = await create({ ...ws, cookie: other }, { kind: 'cli' });
      // Its replacement would act as them: another owner is refused, and nothing is minted.
      const refused = await asUser(ws.cookie, 'POST', `/api/keys/${theirs.key.id}/rotate`, {});
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({
        code: 'FORBIDDEN',
        message: expect.stringContaining('revoke it'),
      });
      const listed = (await (await asUser(ws.cookie, 'GET', '/api/keys')).json()).keys;
      expect(listed.filter((k: { kind: string }) => k.kind === 'cli')).toHaveLength(1);
      expect(await use(b, theirs.apiKey)).toBe(200);
      // They rotate it themselves; any owner may end it.
      const own = await asUser(other, 'POST', `/api/keys/${theirs.key.id}/rotate`, { overlapSeconds: 0 });
      expect(own.status).toBe(201);
      const { key } = await own.json();
      expect((await asUser(ws.cookie, 'DELETE', `/api/keys/${key.id}`)).status).toBe(200);
    });

    it('rotates with no overlap, a CLI key for its own user, and by default for a day', async () => {
      const ws = await owner();
      const cli = await create(ws, { kind: 'cli' });
      expect(await use(b, cli.apiKey)).toBe(200);
      const now = await (
        await asUser(ws.cookie, 'POST', `/api/keys/${cli.key.id}/rotate`, { overlapSeconds: 0 })
      ).json();
      expect(now.key).toMatchObject({ kind: 'cli', userId: cli.key.userId });
      expect(await use(a, cli.apiKey)).toBe(401);
      expect(await refusedWithin(b, cli.apiKey, REVOCATION_BOUND_MS)).toBeLessThan(REVOCATION_BOUND_MS);
      const daily = await (await asUser(ws.cookie, 'POST', `/api/keys/${now.key.id}/rotate`)).json();
      const overlap = Date.parse(daily.replaced.expiresAt) - Date.now();
      expect(overlap).toBeGreaterThan(86_400_000 - 60_000);
      expect(overlap).toBeLessThanOrEqual(86_400_000);
      // Revoking a key in its overlap ends the overlap.
      expect((await asUser(ws.cookie, 'DELETE', `/api/keys/${now.key.id}`)).status).toBe(200);
      expect(await use(a, now.apiKey)).toBe(401);
    });

    it('keeps every tenant to its own keys: another tenant’s key or app is not found', async () => {
      const mine = await owner();
      const theirs = await owner();
      const their = await create(theirs, { kind: 'app', appId: theirs.appId });
      const listed = (await (await asUser(mine.cookie, 'GET', '/api/keys')).json()).keys;
      expect(listed.map((k: { id: string }) => k.id)).not.toContain(their.key.id);
      const notFound = { message: 'Key not found', code: 'NOT_FOUND' };
      for (const [method, path, body] of [
        ['PATCH', `/api/keys/${their.key.id}`, { name: 'mine now' }],
        ['POST', `/api/keys/${their.key.id}/rotate`, {}],
        ['DELETE', `/api/keys/${their.key.id}`, undefined],
      ] as const) {
        const response = await asUser(mine.cookie, method, path, body);
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(await response.json()).toEqual(notFound);
      }
      const foreignApp = await asUser(mine.cookie, 'POST', '/api/keys', { kind: 'app', appId: theirs.appId });
      expect(foreignApp.status).toBe(404);
      expect(await foreignApp.json()).toEqual({ message: 'App not found', code: 'NOT_FOUND' });
      expect(await use(a, their.apiKey)).toBe(200);
      // Connection Keys are managed under their connection, not here.
      const connection = await asUser(mine.cookie, 'POST', '/api/connections', { provider: 'search' });
      const connectionId = (await connection.json()).connection.id;
      const connectionKey = await (
        await asUser(mine.cookie, 'POST', `/api/connections/${connectionId}/keys`, {})
      ).json();
      expect((await asUser(mine.cookie, 'DELETE', `/api/keys/${connectionKey.id}`)).status).toBe(404);
      expect(await use(a, connectionKey.key)).toBe(200);
    });

    it('answers only the workspace’s owners: 401 without a session, 403 for members and viewers', async () => {
      const ws = await owner();
      const { key } = await create(ws, { kind: 'app', appId: ws.appId });
      const anonymous = await fetch(`${a.url}/api/keys`);
      expect(anonymous.status).toBe(401);
      expect(await anonymous.json()).toEqual({ message: 'Unauthorized' });
      // Refusals too are never kept by a cache, as every answer of these routes.
      expect(anonymous.headers.get('cache-control')).toBe('no-store');
      // The dashboard takes the session cookie only: a key of the workspace is no way in.
      const byKey = await fetch(`${a.url}/api/keys`, { headers: { authorization: `Bearer ${ws.appKey}` } });
      expect(byKey.status).toBe(401);
      expect(byKey.headers.get('cache-control')).toBe('no-store');
      for (const role of ['member', 'viewer'] as const) {
        const cookie = await teammate(ws, role);
        for (const [method, path, body] of [
          ['GET', '/api/keys', undefined],
          ['POST', '/api/keys', { kind: 'cli' }],
          ['PATCH', `/api/keys/${key.id}`, { name: 'x' }],
          ['POST', `/api/keys/${key.id}/rotate`, {}],
          ['DELETE', `/api/keys/${key.id}`, undefined],
        ] as const) {
          const response = await asUser(cookie, method, path, body);
          expect(response.status, `${role} ${method} ${path}`).toBe(403);
          expect(response.headers.get('cache-control'), `${role} ${method} ${path}`).toBe('no-store');
          expect(await response.json()).toEqual({
            message: 'Forbidden: only workspace owners manage keys',
            code: 'FORBIDDEN',
          });
        }
      }
      const listed = (await (await asUser(ws.cookie, 'GET', '/api/keys')).json()).keys;
      expect(listed.find((k: { id: string }) => k.id === key.id)).toMatchObject({
        name: null,
        expiresAt: null,
      });
    });

    it('refuses bad input with a clear 4xx', async () => {
      const ws = await owner();
      const { key } = await create(ws, { kind: 'app', appId: ws.appId });
      const refusals: [string, string, unknown, number, string | RegExp][] = [
        ['POST', '/api/keys', '{"kind":', 400, 'Request body must be valid JSON'],
        ['POST', '/api/keys', {}, 400, /kind/],
        ['POST', '/api/keys', { kind: 'connection' }, 400, /kind/],
        ['POST', '/api/keys', { kind: 'app' }, 400, /appId: an App Key needs the appId of its app/],
        ['POST', '/api/keys', { kind: 'cli', appId: ws.appId }, 400, /appId: a CLI key belongs/],
        ['POST', '/api/keys', { kind: 'cli', name: 5 }, 400, /name/],
        ['POST', '/api/keys', { kind: 'cli', name: 'x'.repeat(101) }, 400, /name/],
        ['POST', '/api/keys', { kind: 'cli', name: '   ' }, 400, /name/],
        ['POST', '/api/keys', { kind: 'cli', extra: true }, 400, /extra/],
        ['POST', '/api/keys', { kind: 'app', appId: 'not-an-id' }, 404, 'App not found'],
        ['POST', '/api/keys', `{"kind":"cli","name":"${'x'.repeat(70_000)}"}`, 413, 'Request body too large'],
        ['PATCH', `/api/keys/${key.id}`, {}, 400, /name/],
        ['PATCH', `/api/keys/${key.id}`, { name: 'bad\u0000name' }, 400, /name/],
        // Control characters, as in workspace names: a terminal listing the keys would act on them.
        [
          'PATCH',
          `/api/keys/${key.id}`,
          { name: 'x\u001b[31m' },
          400,
          /name: must not contain control characters/,
        ],
        ['POST', '/api/keys', { kind: 'cli', name: 'ok\u0007bell' }, 400, /name: must not contain control/],
        ['PATCH', '/api/keys/not-an-id', { name: 'x' }, 404, 'Key not found'],
        ['POST', `/api/keys/${key.id}/rotate`, { overlapSeconds: -1 }, 400, /overlapSeconds/],
        ['POST', `/api/keys/${key.id}/rotate`, { overlapSeconds: 1.5 }, 400, /overlapSeconds/],
        ['POST', `/api/keys/${key.id}/rotate`, { overlapSeconds: 604_801 }, 400, /overlapSeconds/],
        ['POST', `/api/keys/${key.id}/rotate`, { overlapSeconds: '60' }, 400, /overlapSeconds/],
        ['DELETE', '/api/keys/not-an-id', undefined, 404, 'Key not found'],
      ];
      for (const [method, path, body, status, message] of refusals) {
        const response = await asUser(ws.cookie, method, path, body);
        const label = `${method} ${path} ${JSON.stringify(body)?.slice(0, 60)}`;
        expect(response.status, label).toBe(status);
        const answer = await response.json();
        expect(Object.keys(answer).sort(), label).toEqual(['code', 'message']);
        expect(answer.message, label).toMatch(message);
      }
      const form = await asUser(ws.cookie, 'POST', '/api/keys', 'kind=cli', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(form.status).toBe(415);
      const crossSite = await asUser(ws.cookie, 'DELETE', `/api/keys/${key.id}`, undefined, {
        origin: 'https://evil.example',
      });
      expect(crossSite.status).toBe(403);
      // Nothing above changed the key.
      const listed = (await (await asUser(ws.cookie, 'GET', '/api/keys')).json()).keys;
      expect(listed.find((k: { id: string }) => k.id === key.id)).toMatchObject({
        name: null,
        expiresAt: null,
      });
    });

    describe('DELETE /api/connections/{id}/keys/{keyId}', () => {
      const connectionWithKeys = async (ws: SignedInOwner) => {
        const made = await asUser(ws.cookie, 'POST', '/api/connections', { provider: 'search' });
        const connectionId = (await made.json()).connection.id as string;
        const mint = async () =>
          (await (await asUser(ws.cookie, 'POST', `/api/connections/${connectionId}/keys`, {})).json()) as {
            id: string;
            key: string;
          };
        return { connectionId, first: await mint(), second: await mint() };
      };

      it('revokes one Connection Key, here at once and on another instance within the bound', async () => {
        const ws = await owner();
        const { connectionId, first, second } = await connectionWithKeys(ws);
        expect(await use(a, first.key)).toBe(200);
        expect(await use(b, first.key)).toBe(200);
        const path = `/api/connections/${connectionId}/keys/${first.id}`;
        const revoked = await asUser(ws.cookie, 'DELETE', path);
        expect(revoked.status).toBe(200);
        expect(await revoked.json()).toEqual({ id: first.id, connection_id: connectionId, revoked: true });
        expect(await use(a, first.key)).toBe(401);
        expect(await refusedWithin(b, first.key, REVOCATION_BOUND_MS)).toBeLessThan(REVOCATION_BOUND_MS);
        // The connection and its other key carry on.
        expect(await use(b, second.key)).toBe(200);
        const connection = await (await asUser(ws.cookie, 'GET', `/api/connections/${connectionId}`)).json();
        expect(connection.connection.status).toBe('connected');
        const again = await asUser(ws.cookie, 'DELETE', path);
        expect(again.status).toBe(404);
        expect(await again.json()).toEqual({ message: 'Connection Key not found', code: 'NOT_FOUND' });
      });

      it('finds only a live key of that connection of the caller’s tenant; viewers and strangers are refused', async () => {
        const ws = await owner();
        const { connectionId, first } = await connectionWithKeys(ws);
        const other = await connectionWithKeys(ws);
        const stranger = await owner();
        const cases: [string, string, number][] = [
          [ws.cookie, `/api/connections/${other.connectionId}/keys/${first.id}`, 404],
          [ws.cookie, `/api/connections/${connectionId}/keys/not-an-id`, 404],
          [ws.cookie, `/api/connections/not-an-id/keys/${first.id}`, 404],
          [stranger.cookie, `/api/connections/${connectionId}/keys/${first.id}`, 404],
          [await teammate(ws, 'viewer'), `/api/connections/${connectionId}/keys/${first.id}`, 403],
        ];
        // The App Key of the workspace is not a Connection Key.
        const appKeyId = (await (await asUser(ws.cookie, 'GET', '/api/keys')).json()).keys[0].id;
        cases.push([ws.cookie, `/api/connections/${connectionId}/keys/${appKeyId}`, 404]);
        for (const [cookie, path, status] of cases) {
          expect((await asUser(cookie, 'DELETE', path)).status, path).toBe(status);
        }
        const anonymous = await fetch(`${a.url}/api/connections/${connectionId}/keys/${first.id}`, {
          method: 'DELETE',
        });
        expect(anonymous.status).toBe(401);
        expect(await use(a, first.key)).toBe(200);
        expect(await use(a, ws.appKey)).toBe(200);
      });
    });
  });
}
