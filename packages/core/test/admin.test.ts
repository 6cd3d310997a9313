/**
 * The operators' API over real HTTP: platform admins (`SERVICE_ADMIN_EMAILS`) list tenants, grant
 * credit, suspend and resume; everyone else is refused; every action leaves an audit row. A
 * suspension refuses the tenant's metered calls, on another instance too well inside its caches'
 * lifetime, and a resumption lets them through again.
 *
 * @see docs/operators.md
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.js';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, seedProviders } from './support/metered.js';
import { type RunningPlatform, signedInOwner, startPlatform } from './support/platform.js';
import { lastStaleCallAfter } from './support/propagation.js';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

/** Far longer than any wait below: a suspension seen on B in time arrived by notice, not by expiry. */
const LONG_CACHE_MS = 60_000;
/** The stated bound on a suspension reaching another instance. */
const SUSPENSION_BOUND_MS = 100;

for (const kind of STORE_KINDS) {
  describe(`operators (${kind})`, () => {
    let store: TestStore;
    let second: Store | undefined;
    let upstream: FakeUpstream;
    let a: RunningPlatform;
    let b: RunningPlatform;
    let adminCookie: string;
    let userCookie: string;
    let emails = 0;

    beforeAll(async () => {
      store = await openTestStore(kind);
      second = kind === 'postgres' ? await openSecondHandle(store) : undefined;
      upstream = await startFakeUpstream();
      // Listed in another case and with blanks: the match is case-insensitive.
      const options = { adminEmails: [`Ops-${kind}@Example.TEST`], keyCacheTtlMs: LONG_CACHE_MS };
      a = await startPlatform(store, options);
      b = await startPlatform(second ?? store, options);
      await seedProviders(a.platform, upstream.url);
      adminCookie = (await signedInOwner(a, `ops-${kind}@example.test`)).cookie;
      userCookie = (await signedInOwner(a, `user-${kind}@example.test`)).cookie;
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await upstream?.close();
      await second?.close();
      await store?.dispose();
    });

    const as = (
      cookie: string | null,
      method: string,
      path: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ) =>
      fetch(`${a.url}${path}`, {
        method,
        headers: { ...(cookie ? { cookie } : {}), 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
    const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
      as(adminCookie, method, path, body, headers);
    const tenant = () => createMeteredTenant(a.platform, 1_000_000);
    /** The status of one metered completion made with `key` on `server`. */
    const complete = async (server: RunningPlatform, key: string) => {
      const response = await fetch(`${server.url}/proxy/llm/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo-small', messages: [{ role: 'user', content: 'hi' }] }),
      });
      return { status: response.status, body: await response.json() };
    };
    /** How long `server` still answered `key`'s calls otherwise than `wanted` (see `lastStaleCallAfter`). */
    const lastWrongAnswerAfter = (server: RunningPlatform, key: string, wanted: number) =>
      // Far inside the 60-second caches: reaching it means the notice never came.
      lastStaleCallAfter(async () => (await complete(server, key)).status, wanted, LONG_CACHE_MS / 10);
    const auditOf = (tenantId: string) =>
      store.db
        .selectFrom('operator_actions')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .orderBy('id')
        .execute();

    it('answers 401 signed out and 403 to a signed-in user who is not an admin, on every route', async () => {
      const { tenantId } = await tenant();
      const routes: Array<[string, string, unknown?]> = [
        ['GET', '/api/admin/tenants'],
        ['GET', `/api/admin/tenants/${tenantId}`],
        ['POST', `/api/admin/tenants/${tenantId}/grants`, { amountUsd: 5, reason: 'welcome' }],
        ['POST', `/api/admin/tenants/${tenantId}/suspend`, { reason: 'abuse' }],
        ['POST', `/api/admin/tenants/${tenantId}/resume`, {}],
      ];
      for (const [method, path, body] of routes) {
        const signedOut = await as(null, method, path, body);
        expect(signedOut.status, `${method} ${path}`).toBe(401);
        expect(signedOut.headers.get('cache-control'), `${method} ${path}`).toBe('no-store');
        expect(await signedOut.json()).toEqual({ message: 'Unauthorized' });
        const user = await as(userCookie, method, path, body);
        expect(user.status, `${method} ${path}`).toBe(403);
        expect(user.headers.get('cache-control'), `${method} ${path}`).toBe('no-store');
        expect(await user.json()).toEqual({ message: 'Forbidden: platform admins only', code: 'FORBIDDEN' });
      }
      expect(await auditOf(tenantId)).toEqual([]);
    });

    it('lists tenants newest first with balance, status and owners, and reads one with its audit trail', async () => {
      const older = await tenant();
      const newer = await tenant();
      const list = await admin('GET', '/api/admin/tenants?limit=2');
      expect(list.status).toBe(200);
      const { tenants } = await list.json();
      expect(tenants.map((t: { id: string }) => t.id)).toEqual([newer.tenantId, older.tenantId]);
      expect(tenants[0]).toEqual({
        id: newer.tenantId,
        name: expect.any(String),
        status: 'active',
        balanceUsd: 1,
        ownerEmails: [expect.stringMatching(/@example\.test$/)],
        createdAt: expect.any(String),
      });
      const second = await admin('GET', '/api/admin/tenants?limit=1&offset=1');
      expect((await second.json()).tenants[0].id).toBe(older.tenantId);

      const one = await admin('GET', `/api/admin/tenants/${older.tenantId}`);
      expect(one.status).toBe(200);
      expect(await one.json()).toEqual({
        tenant: expect.objectContaining({ id: older.tenantId }),
        actions: [],
      });
    });

    it('answers 404 for a tenant that does not exist, whatever the id looks like', async () => {
      for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', "1'; drop table tenants"]) {
        const path = `/api/admin/tenants/${encodeURIComponent(id)}`;
        for (const [method, suffix, body] of [
          ['GET', '', undefined],
          ['POST', '/grants', { amountUsd: 1, reason: 'x' }],
          ['POST', '/suspend', { reason: 'x' }],
          ['POST', '/resume', {}],
        ] as const) {
          const response = await admin(method, `${path}${suffix}`, body);
          expect(response.status, `${method} ${id}${suffix}`).toBe(404);
          expect(await response.json()).toEqual({ message: 'Tenant not found', code: 'TENANT_NOT_FOUND' });
        }
      }
    });

    it('refuses bad input with 400 and a message naming the field', async () => {
      const { tenantId } = await tenant();
      const grants = `/api/admin/tenants/${tenantId}/grants`;
      for (const body of [
        { amountUsd: 0, reason: 'x' },
        { amountUsd: -5, reason: 'x' },
        { amountUsd: 10_000.01, reason: 'x' },
        { amountUsd: 1.005, reason: 'x' },
        { amountUsd: '5', reason: 'x' },
        { amountUsd: 5 },
        { amountUsd: 5, reason: '   ' },
        { amountUsd: 5, reason: 'x'.repeat(501) },
        { amountUsd: 5, reason: 'x', tenantId },
        '{"amountUsd": 5,',
      ]) {
        const response = await admin('POST', grants, body);
        expect(response.status, JSON.stringify(body)).toBe(400);
        const answer = await response.json();
        expect(answer.code).toBe('INVALID_REQUEST');
        expect(answer.message).toEqual(expect.any(String));
      }
      // Amounts that are not whole cents, however small: one that rounds to zero cents is refused
      // like any other, not granted as nothing.
      for (const amountUsd of [1e-9, 1e-8, 5e-324, 0.001, 0.0049]) {
        const response = await admin('POST', grants, { amountUsd, reason: 'x' });
        expect(response.status, String(amountUsd)).toBe(400);
        expect((await response.json()).message, String(amountUsd)).toMatch(/^amountUsd\b/);
      }
      expect((await admin('POST', `/api/admin/tenants/${tenantId}/suspend`, {})).status).toBe(400);
      expect((await admin('GET', '/api/admin/tenants?limit=0')).status).toBe(400);
      expect((await admin('GET', '/api/admin/tenants?offset=-1')).status).toBe(400);
      expect((await admin('GET', '/api/admin/tenants?limit=abc')).status).toBe(400);
      for (const query of ['limit=0x10', 'limit=1e1', 'offset=1e3', 'offset=']) {
        expect((await admin('GET', `/api/admin/tenants?${query}`)).status, query).toBe(400);
      }
      // A cookie-authenticated change from another origin is refused.
      const crossOrigin = await admin(
        'POST',
        grants,
        { amountUsd: 5, reason: 'x' },
        { origin: 'https://evil.test' },
      );
      expect(crossOrigin.status).toBe(403);
      expect(await auditOf(tenantId)).toEqual([]);
    });

    it('grants credit as a grant ledger entry with its audit row, once per Idempotency-Key', async () => {
      const { tenantId } = await tenant();
      const grants = `/api/admin/tenants/${tenantId}/grants`;
      const key = { 'idempotency-key': `grant-${++emails}` };
      const first = await admin('POST', grants, { amountUsd: 25.5, reason: 'Conference credit' }, key);
      expect(first.status).toBe(201);
      expect(first.headers.get('cache-control')).toBe('no-store');
      const granted = await first.json();
      expect(granted).toEqual({
        action: {
          id: expect.any(String),
          tenantId,
          action: 'grant',
          operator: `ops-${kind}@example.test`,
          reason: 'Conference credit',
          amountUsd: 25.5,
          ledgerEntryId: expect.any(String),
          createdAt: expect.any(String),
        },
        balanceUsd: 26.5,
      });
      const replay = await admin('POST', grants, { amountUsd: 25.5, reason: 'Conference credit' }, key);
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.headers.get('cache-control')).toBe('no-store');
      expect(await replay.json()).toEqual(granted);
      const reused = await admin('POST', grants, { amountUsd: 99, reason: 'other' }, key);
      expect(reused.status).toBe(409);
      expect((await reused.json()).code).toBe('IDEMPOTENCY_CONFLICT');

      const entries = await store.db
        .selectFrom('ledger_entries')
        .select(['id', 'kind', 'amount_micros', 'description'])
        .where('tenant_id', '=', tenantId)
        .where('kind', '=', 'grant')
        .orderBy('id')
        .execute();
      // The fixture's own grant, then the operator's, once.
      expect(entries.slice(1)).toEqual([
        {
          id: Number(granted.action.ledgerEntryId),
          kind: 'grant',
          amount_micros: 25_500_000,
          description: 'Conference credit',
        },
      ]);
      const wallet = await store.db
        .selectFrom('wallets')
        .select('balance_micros')
        .where('tenant_id', '=', tenantId)
        .executeTakeFirstOrThrow();
      expect(wallet.balance_micros).toBe(26_500_000);
      expect(await auditOf(tenantId)).toEqual([
        expect.objectContaining({
          action: 'grant',
          operator: `ops-${kind}@example.test`,
          reason: 'Conference credit',
          amount_micros: 25_500_000,
          ledger_entry_id: Number(granted.action.ledgerEntryId),
          created_at: expect.any(Date),
        }),
      ]);
      const read = await (await admin('GET', `/api/admin/tenants/${tenantId}`)).json();
      expect(read.tenant.balanceUsd).toBe(26.5);
      expect(read.actions).toEqual([granted.action]);
    });

    it('suspends a tenant: its metered calls are refused on every instance, its keys stay; resuming lets them through', async () => {
      const metered = await tenant();
      const { tenantId } = metered;
      // B has the tenant's key and status cached for a minute: only the notice can change its mind.
      expect((await complete(b, metered.appKey)).status).toBe(200);

      const suspended = await admin('POST', `/api/admin/tenants/${tenantId}/suspend`, {
        reason: 'Chargeback',
      });
      expect(suspended.status).toBe(200);
      const answer = await suspended.json();
      expect(answer.tenant.status).toBe('suspended');
      expect(answer.action).toMatchObject({ action: 'suspend', reason: 'Chargeback', amountUsd: null });

      const refused = await complete(a, metered.appKey);
      expect(refused).toEqual({
        status: 403,
        body: {
          error: {
            code: 'tenant_suspended',
            message: 'This workspace is suspended; contact the platform operator',
            suggested_fix: 'Ask the platform operator to resume the workspace',
          },
        },
      });
      // How long B still admitted calls: a call started after the notice landed is refused, however
      // long the loaded machine then takes to answer it.
      expect(await lastWrongAnswerAfter(b, metered.appKey, 403)).toBeLessThan(SUSPENSION_BOUND_MS);
      // Its keys keep existing, and its balance still reads (enforcement is on metered calls).
      const keys = await store.db
        .selectFrom('api_keys')
        .select('revoked_at')
        .where('tenant_id', '=', tenantId)
        .execute();
      expect(keys.every((key) => key.revoked_at === null)).toBe(true);
      const balance = await fetch(`${a.url}/api/v1/balance`, {
        headers: { authorization: `Bearer ${metered.appKey}` },
      });
      expect(balance.status).toBe(200);

      const again = await admin('POST', `/api/admin/tenants/${tenantId}/suspend`, { reason: 'twice' });
      expect(again.status).toBe(409);
      expect(await again.json()).toEqual({
        message: 'The tenant is already suspended',
        code: 'TENANT_ALREADY_SUSPENDED',
      });

      const resumed = await admin('POST', `/api/admin/tenants/${tenantId}/resume`, { reason: 'Dispute won' });
      expect(resumed.status).toBe(200);
      expect((await resumed.json()).tenant.status).toBe('active');
      expect((await complete(a, metered.appKey)).status).toBe(200);
      expect(await lastWrongAnswerAfter(b, metered.appKey, 200)).toBeLessThan(SUSPENSION_BOUND_MS);
      const notSuspended = await admin('POST', `/api/admin/tenants/${tenantId}/resume`, {});
      expect(notSuspended.status).toBe(409);
      expect((await notSuspended.json()).code).toBe('TENANT_NOT_SUSPENDED');

      expect((await auditOf(tenantId)).map((row) => [row.action, row.operator, row.reason])).toEqual([
        ['suspend', `ops-${kind}@example.test`, 'Chargeback'],
        ['resume', `ops-${kind}@example.test`, 'Dispute won'],
      ]);
    });
  });
}
