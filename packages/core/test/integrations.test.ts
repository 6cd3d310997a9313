/**
 * `/api/integrations` over real HTTP: the public shape to anonymous callers (cached five minutes
 * on the platform clock, dropped on every instance when an admin switches an integration), the
 * workspace's overlay to signed-in ones, the tenant's switch with the managed pool provisioned
 * for speech and transcription, regeneration's refusals, the shared limiter counted in the
 * store, and every error of the API contract's table with its exact message.
 *
 * @see docs/api/integrations.md
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertProvider } from '../src/proxy/providers.js';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, type MeteredTenant, seedProviders } from './support/metered.js';
import { devSignIn, type RunningPlatform, signedInTeammate, startPlatform } from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

const PUBLIC_FIELDS = [
  'category',
  'default_profile',
  'description',
  'docs_url',
  'env_bootstrap',
  'icon_name',
  'logo_url',
  'name',
  'provider',
  'supported_profiles',
];
const TENANT_FIELDS = [
  'category',
  'costThisMonth',
  'default_profile',
  'description',
  'docs_url',
  'enabled',
  'env_bootstrap',
  'id',
  'logo_url',
  'name',
  'provider',
  'provisioned',
  'supported_profiles',
  'tenantEnabled',
  'usageThisMonth',
];
const FIVE_MINUTES = 5 * 60_000;

let store: TestStore;
let upstream: FakeUpstream;
let a: RunningPlatform;
let b: RunningPlatform;
/** The clock of both platforms: frozen unless a test moves it. */
let clock = Date.now();
let tenant: MeteredTenant;
let owner: string;
let member: string;
let viewer: string;
let otherOwner: string;
let admin: string;
let emails = 0;

beforeAll(async () => {
  store = await openTestStore();
  upstream = await startFakeUpstream();
  const options = { now: () => clock, adminEmails: ['ops@example.test'] };
  a = await startPlatform(store, options);
  b = await startPlatform(store, options);
  await seedProviders(a.platform, upstream.url);
  const { db } = store;
  await db.updateTable('integrations').set({ kind: 'llm_gateway' }).where('provider', '=', 'llm').execute();
  for (const [provider, name, kind, profiles] of [
    ['speech', 'Speech', 'speech_synthesis', ['vendo_managed_pool']],
    ['transcription', 'Transcription', 'transcription', ['vendo_managed_pool']],
    ['calendar', 'Calendar', 'connector', ['oauth_user']],
    ['retired', 'Retired', 'service', ['vendo_managed_pool']],
  ] as const) {
    await db
      .insertInto('integrations')
      .values({
        provider,
        name,
        kind,
        category: 'test',
        default_profile: profiles[0],
        supported_profiles: JSON.stringify(profiles),
        enabled: provider !== 'retired',
      })
      .execute();
  }
  // Speech has a managed pool; transcription has none, so provisioning it fails for real.
  await upsertProvider(db, a.platform.context.sealer, {
    slug: 'speech',
    upstreamUrl: upstream.url,
    dialect: 'per_call',
    rates: [{ meter: 'call', unitPriceMicros: '2000' }],
  });
  tenant = await createMeteredTenant(a.platform, 10_000_000);
  owner = await signedInTeammate(a, tenant.tenantId, 'owner', 'owner@example.test');
  member = await signedInTeammate(a, tenant.tenantId, 'member', 'member@example.test');
  viewer = await signedInTeammate(a, tenant.tenantId, 'viewer', 'viewer@example.test');
  const other = await createMeteredTenant(a.platform, 10_000_000);
  otherOwner = await signedInTeammate(a, other.tenantId, 'owner', 'other@example.test');
  admin = await devSignIn(a, 'ops@example.test');
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await upstream?.close();
  await store?.dispose();
});

const send = (
  server: RunningPlatform,
  cookie: string | null,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) =>
  fetch(`${server.url}${path}`, {
    method,
    headers: { ...(cookie ? { cookie } : {}), 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
const get = (cookie: string | null, path: string, server = a) => send(server, cookie, 'GET', path);
const toggle = (cookie: string | null, slug: string, body: unknown = { enabled: true }, headers = {}) =>
  send(a, cookie, 'POST', `/api/integrations/${slug}`, body, headers);
const regenerate = (cookie: string | null, slug: string) =>
  send(a, cookie, 'POST', `/api/integrations/${slug}/regenerate`);
/** A signed-in user's list, as a map by provider. */
const listOf = async (cookie: string) => {
  const response = await get(cookie, '/api/integrations');
  expect(response.status).toBe(200);
  const rows = (await response.json()) as Array<Record<string, unknown>>;
  return new Map(rows.map((row) => [row.provider as string, row]));
};
const expectError = async (response: Response, status: number, message: string) => {
  expect(response.status, await response.clone().text()).toBe(status);
  expect(((await response.json()) as { message: string }).message).toBe(message);
};

describe('anonymous callers', () => {
  it('list the enabled integrations in the public shape', async () => {
    const response = await get(null, '/api/integrations');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('vary')).toMatch(/cookie/i);
    const { integrations } = (await response.json()) as { integrations: Array<Record<string, unknown>> };
    expect(integrations.map((row) => row.provider)).toEqual([
      'calendar',
      'llm',
      'search',
      'speech',
      'transcription',
    ]);
    for (const row of integrations) expect(Object.keys(row).sort()).toEqual(PUBLIC_FIELDS);
    expect(integrations.find((row) => row.provider === 'search')).toMatchObject({
      name: 'Search',
      default_profile: 'vendo_managed_pool',
      supported_profiles: ['vendo_managed_pool', 'byok_static'],
      icon_name: null,
      env_bootstrap: {
        vars: [{ name: 'SEARCH_API_KEY', value_from: 'app_key' }, expect.anything()],
        restart: 'on_change',
      },
    });
  });

  it('read one in the public shape; a disabled or unknown one is 404 Not found', async () => {
    const response = await get(null, '/api/integrations/calendar');
    expect(response.status).toBe(200);
    const row = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(row).sort()).toEqual(PUBLIC_FIELDS);
    expect(row).toMatchObject({ provider: 'calendar', default_profile: 'oauth_user' });
    await expectError(await get(null, '/api/integrations/retired'), 404, 'Not found');
    await expectError(await get(null, '/api/integrations/nope'), 404, 'Not found');
    await expectError(await get(null, `/api/integrations/${'x'.repeat(300)}`), 404, 'Not found');
  });

  it('a stale or forged cookie reads as anonymous, never as an attack', async () => {
    for (let i = 0; i < 40; i++) {
      const response = await get('service_session=forged-or-expired', '/api/integrations');
      expect(response.status).toBe(200);
      expect(await response.json()).toHaveProperty('integrations');
    }
  });

  it('are served from a cache of five minutes on the platform clock', async () => {
    await store.db
      .updateTable('integrations')
      .set({ name: 'Calendar 2' })
      .where('provider', '=', 'calendar')
      .execute();
    const names = async () => {
      const list = (await (await get(null, '/api/integrations')).json()) as {
        integrations: Array<{ name: string }>;
      };
      const detail = (await (await get(null, '/api/integrations/calendar')).json()) as { name: string };
      return [list.integrations.map((row) => row.name).includes('Calendar 2'), detail.name];
    };
    expect(await names()).toEqual([false, 'Calendar']);
    clock += FIVE_MINUTES - 1;
    expect(await names()).toEqual([false, 'Calendar']);
    clock += 1;
    expect(await names()).toEqual([true, 'Calendar 2']);
    // Signed in, the row is read fresh.
    expect((await listOf(owner)).get('calendar')?.name).toBe('Calendar 2');
  });

  it('no longer see an integration an admin disabled, on every instance, at once', async () => {
    // Both instances hold the list in their caches.
    for (const server of [a, b]) {
      const list = (await (await get(null, '/api/integrations', server)).json()) as {
        integrations: unknown[];
      };
      expect(list.integrations).toHaveLength(5);
    }
    await expectError(
      await send(a, member, 'PATCH', '/api/admin/integrations/calendar', { enabled: false }),
      403,
      'Forbidden: platform admins only',
    );
    await expectError(
      await send(a, admin, 'PATCH', '/api/admin/integrations/calendar', { enabled: 'no' }),
      400,
      'enabled: Invalid input: expected boolean, received string',
    );
    await expectError(
      await send(a, admin, 'PATCH', '/api/admin/integrations/nope', { enabled: false }),
      404,
      'Integration not found',
    );
    const patched = await send(a, admin, 'PATCH', '/api/admin/integrations/calendar', { enabled: false });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toEqual({ provider: 'calendar', enabled: false });
    // The clock stands still: only the change notice can have dropped B's cache.
    await expect
      .poll(
        async () => {
          const response = await get(null, '/api/integrations', b);
          return ((await response.json()) as { integrations: Array<{ provider: string }> }).integrations.map(
            (row) => row.provider,
          );
        },
        { timeout: 2000, interval: 20 },
      )
      .not.toContain('calendar');
    await expectError(await get(null, '/api/integrations/calendar', b), 404, 'Not found');
    // Signed in, it is still listed, flagged disabled; switching it is not possible.
    expect((await listOf(owner)).get('calendar')?.enabled).toBe(false);
    await expectError(await toggle(owner, 'calendar'), 404, 'Not found');
    await send(a, admin, 'PATCH', '/api/admin/integrations/calendar', { enabled: true });
    await expect
      .poll(async () => (await get(null, '/api/integrations/calendar', b)).status, {
        timeout: 2000,
        interval: 20,
      })
      .toBe(200);
  });

  it('keep no list or detail read while a change notice was heard: it may predate the change', async () => {
    const integrations = a.platform.context.integrations;
    clock += FIVE_MINUTES; // past both caches
    // Reads under way as the notice of an admin's change is heard...
    const list = integrations.publicList();
    const detail = integrations.publicDetail('calendar');
    integrations.forget();
    await Promise.all([list, detail]);
    // ...may have read the store before the change committed (here: after them, without a notice).
    await store.db
      .updateTable('integrations')
      .set({ name: 'Calendar, changed' })
      .where('provider', '=', 'calendar')
      .execute();
    const listed = (await (await get(null, '/api/integrations')).json()) as {
      integrations: Array<{ name: string }>;
    };
    expect(listed.integrations.map((row) => row.name)).toContain('Calendar, changed');
    expect(((await (await get(null, '/api/integrations/calendar')).json()) as { name: string }).name).toBe(
      'Calendar, changed',
    );
    await store.db
      .updateTable('integrations')
      .set({ name: 'Calendar' })
      .where('provider', '=', 'calendar')
      .execute();
    integrations.forget();
  });
});

describe('signed-in callers', () => {
  it('get a bare array of stored rows with the workspace overlay, never cached', async () => {
    const response = await get(owner, '/api/integrations');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const rows = (await response.json()) as Array<Record<string, unknown>>;
    expect(Array.isArray(rows)).toBe(true);
    for (const row of rows) expect(Object.keys(row).sort()).toEqual(TENANT_FIELDS);
    expect(rows.find((row) => row.provider === 'retired')).toMatchObject({
      enabled: false,
      tenantEnabled: false,
    });
    // The fixture's app is bound to managed-pool connections of llm and search.
    const byProvider = new Map(rows.map((row) => [row.provider, row]));
    expect(byProvider.get('search')).toMatchObject({ tenantEnabled: true, provisioned: true });
    expect(byProvider.get('speech')).toMatchObject({ tenantEnabled: false, provisioned: false });
  });

  it("counts this month's usage events and their cost, UTC, of their own workspace only", async () => {
    const search = () =>
      fetch(`${a.url}/proxy/search/search?q=x`, { headers: { authorization: `Bearer ${tenant.appKey}` } });
    for (let i = 0; i < 3; i++) expect((await search()).status).toBe(200);
    await a.platform.context.metering.settled(tenant.tenantId);
    // One of the three happened last month.
    const [oldest] = await store.db
      .selectFrom('usage_events')
      .select('id')
      .where('tenant_id', '=', tenant.tenantId)
      .orderBy('created_at')
      .execute();
    const now = new Date(clock);
    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) - 1);
    await sql`update usage_events set created_at = ${lastMonth} where id = ${oldest!.id}`.execute(store.db);
    expect((await listOf(owner)).get('search')).toMatchObject({ usageThisMonth: 2, costThisMonth: 2400 });
    const detail = await get(owner, '/api/integrations/search');
    expect(await detail.json()).toMatchObject({ provider: 'search', tenantEnabled: true, usageThisMonth: 2 });
    // Another workspace sees none of it.
    expect((await listOf(otherOwner)).get('search')).toMatchObject({ usageThisMonth: 0, costThisMonth: 0 });
  });

  it("see the LLM gateway's detail enabled only through a static own-key connection while the switch is unset", async () => {
    // The fixture's managed-pool connection is an active connection: the list says enabled, as
    // for any integration; the gateway's detail waits for the workspace's own key.
    expect((await listOf(owner)).get('llm')).toMatchObject({ tenantEnabled: true, provisioned: true });
    expect(await (await get(owner, '/api/integrations/llm')).json()).toMatchObject({ tenantEnabled: false });
    const own = await send(a, owner, 'POST', '/api/connections', {
      provider: 'llm',
      profile: 'byok_static',
      credential: { api_key: 'sk-own' },
    });
    expect(own.status).toBe(201);
    expect(await (await get(owner, '/api/integrations/llm')).json()).toMatchObject({ tenantEnabled: true });
    // Another workspace's own key is not this one's.
    expect(await (await get(otherOwner, '/api/integrations/llm')).json()).toMatchObject({
      tenantEnabled: false,
    });
  });

  it('without a workspace get 404 No workspace found (No workspace on regenerate and usage)', async () => {
    const loner = await devSignIn(a, `loner-${++emails}@example.test`);
    await store.db
      .updateTable('users')
      .set({ default_tenant_id: null })
      .where('email', '=', `loner-${emails}@example.test`)
      .execute();
    await expectError(await get(loner, '/api/integrations'), 404, 'No workspace found');
    await expectError(await get(loner, '/api/integrations/search'), 404, 'No workspace found');
    await expectError(await toggle(loner, 'search'), 404, 'Not found');
    await expectError(await regenerate(loner, 'search'), 404, 'No workspace');
    await expectError(await get(loner, '/api/integrations/search/usage'), 404, 'No workspace');
    await expectError(await get(owner, '/api/integrations/nope'), 404, 'Not found');
  });
});

describe('the switch', () => {
  it('sets the workspace flag both ways, over what connections imply, for that workspace only', async () => {
    const off = await toggle(member, 'search', { enabled: false });
    expect(off.status).toBe(200);
    expect(off.headers.get('cache-control')).toBe('no-store');
    expect(await off.json()).toEqual({ enabled: false });
    expect((await listOf(owner)).get('search')).toMatchObject({ tenantEnabled: false, provisioned: true });
    expect((await listOf(otherOwner)).get('search')?.tenantEnabled).toBe(true);
    expect(await (await toggle(owner, 'search', { enabled: true })).json()).toEqual({ enabled: true });
    expect((await listOf(owner)).get('search')?.tenantEnabled).toBe(true);
    const row = await store.db
      .selectFrom('tenant_integrations')
      .selectAll()
      .where('tenant_id', '=', tenant.tenantId)
      .where('provider', '=', 'search')
      .executeTakeFirstOrThrow();
    expect(row.enabled).toBe(true);
  });

  it('refuses bad input with a clear 4xx', async () => {
    await expectError(await toggle(null, 'search'), 401, 'Unauthorized');
    await expectError(
      await toggle(viewer, 'search'),
      403,
      "Forbidden: only the workspace's owners and members switch integrations",
    );
    await expectError(await toggle(owner, 'nope'), 404, 'Not found');
    await expectError(await toggle(owner, 'retired'), 404, 'Not found');
    await expectError(await toggle(owner, 'search', '{"enabled":'), 400, 'Request body must be valid JSON');
    await expectError(
      await toggle(owner, 'search', {}),
      400,
      'enabled: Invalid input: expected boolean, received undefined',
    );
    await expectError(
      await toggle(owner, 'search', { enabled: 'true' }),
      400,
      'enabled: Invalid input: expected boolean, received string',
    );
    await expectError(
      await toggle(owner, 'search', { enabled: true, extra: 1 }),
      400,
      'Unrecognized key: "extra"',
    );
    await expectError(
      await toggle(owner, 'search', [true]),
      400,
      'Invalid input: expected object, received array',
    );
    await expectError(
      await toggle(owner, 'search', { enabled: 'x'.repeat(70_000) }),
      413,
      'Request body too large',
    );
    await expectError(
      await toggle(owner, 'search', 'enabled=true', { 'content-type': 'application/x-www-form-urlencoded' }),
      415,
      'Content-Type must be application/json',
    );
    await expectError(
      await toggle(owner, 'search', { enabled: true }, { origin: 'https://evil.example' }),
      403,
      'Cross-origin request refused',
    );
  });

  it('provisions one managed-pool connection for speech, which the proxy uses at once', async () => {
    const call = () =>
      fetch(`${a.url}/proxy/speech/search?q=hello`, {
        headers: { authorization: `Bearer ${tenant.cliKey}` },
      });
    // Before: no connection (and the answer is cached; the platform clock stands still).
    expect((await call()).status).toBe(403);
    const answers = await Promise.all([1, 2, 3].map(() => toggle(owner, 'speech')));
    for (const answer of answers) expect(await answer.json()).toEqual({ enabled: true });
    expect(await (await toggle(member, 'speech')).json()).toEqual({ enabled: true });
    const stubs = await store.db
      .selectFrom('connections')
      .selectAll()
      .where('tenant_id', '=', tenant.tenantId)
      .where('provider', '=', 'speech')
      .execute();
    expect(stubs).toHaveLength(1);
    expect(stubs[0]).toMatchObject({
      profile: 'vendo_managed_pool',
      status: 'connected',
      credential_ciphertext: null,
    });
    expect((await listOf(owner)).get('speech')).toMatchObject({ tenantEnabled: true, provisioned: true });
    expect((await call()).status).toBe(200);
    // Off keeps the connection; the switch says off.
    expect(await (await toggle(owner, 'speech', { enabled: false })).json()).toEqual({ enabled: false });
    expect((await listOf(owner)).get('speech')).toMatchObject({ tenantEnabled: false, provisioned: true });
  });

  it('keeps the switch and says why when provisioning fails', async () => {
    const response = await toggle(owner, 'transcription');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      enabled: true,
      error: 'No managed pool is configured for transcription',
    });
    expect((await listOf(owner)).get('transcription')).toMatchObject({
      tenantEnabled: true,
      provisioned: false,
    });
    const connections = await store.db
      .selectFrom('connections')
      .select('id')
      .where('tenant_id', '=', tenant.tenantId)
      .where('provider', '=', 'transcription')
      .execute();
    expect(connections).toEqual([]);
  });

  it('provisions transcription once its managed pool is configured: switching on again retries', async () => {
    // Follows the failure above: the workspace's switch is on, with no connection yet.
    await upsertProvider(store.db, a.platform.context.sealer, {
      slug: 'transcription',
      upstreamUrl: upstream.url,
      dialect: 'per_call',
      rates: [{ meter: 'call', unitPriceMicros: '3000' }],
    });
    const answers = await Promise.all([1, 2].map(() => toggle(owner, 'transcription')));
    for (const answer of answers) expect(await answer.json()).toEqual({ enabled: true });
    const stubs = await store.db
      .selectFrom('connections')
      .selectAll()
      .where('tenant_id', '=', tenant.tenantId)
      .where('provider', '=', 'transcription')
      .execute();
    expect(stubs).toHaveLength(1);
    expect(stubs[0]).toMatchObject({
      profile: 'vendo_managed_pool',
      status: 'connected',
      credential_ciphertext: null,
    });
    expect((await listOf(owner)).get('transcription')).toMatchObject({
      tenantEnabled: true,
      provisioned: true,
    });
    const call = await fetch(`${a.url}/proxy/transcription/search?q=hello`, {
      headers: { authorization: `Bearer ${tenant.cliKey}` },
    });
    expect(call.status).toBe(200);
  });
});

describe('regeneration', () => {
  it('answers each refusal with its exact message', async () => {
    await expectError(await regenerate(null, 'search'), 401, 'Unauthorized');
    await expectError(await regenerate(owner, 'nope'), 404, 'Integration not found');
    await expectError(
      await regenerate(viewer, 'search'),
      403,
      "Forbidden: only the workspace's owners and members switch integrations",
    );
    // Never switched on, no connection.
    await expectError(await regenerate(owner, 'calendar'), 400, 'Integration not provisioned');
    await expectError(
      await regenerate(owner, 'search'),
      400,
      'This integration does not support key regeneration',
    );
    await expectError(
      await regenerate(owner, 'llm'),
      400,
      'LLM is managed by a shared upstream credential; there is no key of this workspace to regenerate',
    );
    // Another workspace never switched speech on.
    await expectError(await regenerate(otherOwner, 'speech'), 400, 'Integration not provisioned');
  });
});

describe('the shared integration limiter', () => {
  it('counts switches and regenerations together per user, in the store, across instances', async () => {
    const limit = { integrations: { limit: 3, windowMs: 60_000 } };
    const c = await startPlatform(store, { rateLimits: limit });
    const d = await startPlatform(store, { rateLimits: limit });
    try {
      const cookie = await signedInTeammate(c, tenant.tenantId, 'member', `limited-${++emails}@example.test`);
      const on = (server: RunningPlatform) =>
        send(server, cookie, 'POST', '/api/integrations/search', { enabled: true });
      expect((await on(c)).status).toBe(200);
      expect((await send(d, cookie, 'POST', '/api/integrations/search/regenerate')).status).toBe(400);
      expect((await on(d)).status).toBe(200);
      for (const server of [c, d]) {
        const refused = await on(server);
        await expectError(refused.clone(), 429, 'Rate limit exceeded');
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      await expectError(
        await send(c, cookie, 'POST', '/api/integrations/search/regenerate'),
        429,
        'Rate limit exceeded',
      );
      // Another user of the same workspace has their own count.
      expect((await send(c, member, 'POST', '/api/integrations/search', { enabled: true })).status).toBe(200);
    } finally {
      await c.close();
      await d.close();
    }
  });
});
