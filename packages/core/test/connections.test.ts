/**
 * Connections over real HTTP: creating (App Key or session), keys, status, bindings, revocation,
 * what a deployed tool reads, credentials sealed at rest, and every refusal.
 *
 * @see docs/api/connections.md
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeConnectionsSchema } from '../src/schemas/connections.js';
import { type MeteredWorld, startMeteredWorld } from './support/metered.js';
import { createTenantFixture, type RunningPlatform, sessionClient } from './support/platform.js';
import type { TestStore } from './support/stores.js';

describe('connections', () => {
  let world: MeteredWorld;
  let store: TestStore;
  let server: RunningPlatform;

  beforeAll(async () => {
    world = await startMeteredWorld();
    ({ store, server } = world);
  });
  afterAll(async () => world?.close());

  /** Signs the tenant's owner in and returns their session cookie. */
  const signIn = async (email: string) => {
    const { token } = await server.platform.devIdp!.issueToken({ email });
    const response = await fetch(`${server.url}/api/auth/session`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    return response.headers.get('set-cookie')!.split(';')[0]!;
  };
  const asUser = sessionClient(() => server.url);
  const asApp = (key: string, method: string, path: string, body?: unknown, headers = {}) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const runtime = async (key: string) => {
    const response = await fetch(`${server.url}/api/deployments/me/connections`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(response.status).toBe(200);
    return runtimeConnectionsSchema.parse(await response.json()).connections;
  };
  const kindsOf = async (appId: string) =>
    (
      await store.db
        .selectFrom('app_events')
        .select('kind')
        .where('app_id', '=', appId)
        .orderBy('seq')
        .execute()
    ).map((e) => e.kind);
  /** A user's own workspace with an app and its App Key. */
  const userWorkspace = async (email: string) => {
    const cookie = await signIn(email);
    const user = await store.db
      .selectFrom('users')
      .select(['id', 'default_tenant_id'])
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    const tenantId = user.default_tenant_id!;
    const app = await store.db
      .insertInto('apps')
      .values({ tenant_id: tenantId, slug: 'tool', name: 'Tool' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const appKey = await server.platform.context.keys.issue({ tenantId, kind: 'app', appId: app.id });
    return { cookie, tenantId, userId: user.id, appId: app.id, appKey: appKey.key };
  };

  it('lets a deployed tool connect with its App Key; the connection is bound to its app and listed for it', async () => {
    const tenant = await createTenantFixture(server.platform);
    const response = await asApp(tenant.appKey, 'POST', '/api/connections', { provider: 'llm' });
    expect(response.status).toBe(201);
    const { connection } = await response.json();
    expect(connection).toMatchObject({ provider: 'llm', status: 'connected', profile: 'vendo_managed_pool' });
    const [listed] = await runtime(tenant.appKey);
    expect(listed).toMatchObject({
      id: connection.id,
      slug: 'llm',
      display_name: 'LLM',
      category: 'ai',
      status: 'connected',
      credential: { type: 'proxy', base_url: `${server.platform.context.baseUrl}/proxy/llm` },
      env_bootstrap: {
        restart: 'on_change',
        vars: [
          { name: 'LLM_API_KEY', value_from: 'app_key', value: null },
          {
            name: 'LLM_BASE_URL',
            value_from: 'proxy_url',
            value: `${server.platform.context.baseUrl}/proxy/llm`,
          },
        ],
      },
    });
    expect(await kindsOf(tenant.appId)).toEqual(['connection.connected']);
    // Its logo and docs page are the catalog's, as /api/integrations gives them, and resolve.
    const { integrations } = await (await fetch(`${server.url}/api/integrations`)).json();
    const catalog = integrations.find((row: { provider: string }) => row.provider === 'llm');
    expect(catalog.logo_url).not.toBe('');
    expect({ logo_url: listed!.logo_url, docs_url: listed!.docs_url }).toEqual({
      logo_url: catalog.logo_url,
      docs_url: catalog.docs_url,
    });
    const logo = await fetch(listed!.logo_url.replace(server.platform.context.baseUrl, server.url));
    expect(logo.status).toBe(200);
  });

  it('keeps a bring-your-own key sealed at rest and hands it only to bound apps', async () => {
    const ws = await userWorkspace('byok@example.com');
    const response = await asUser(ws.cookie, 'POST', '/api/connections', {
      provider: 'llm',
      profile: 'byok_static',
      credential: { api_key: 'sk-user-own-key' },
      app_id: ws.appId,
    });
    expect(response.status).toBe(201);
    const { connection } = await response.json();
    expect(connection.has_credential).toBe(true);
    expect(JSON.stringify(connection)).not.toContain('sk-user-own-key');
    const row = await store.db
      .selectFrom('connections')
      .select('credential_ciphertext')
      .where('id', '=', connection.id)
      .executeTakeFirstOrThrow();
    expect(row.credential_ciphertext).toMatch(/^v1\./);
    expect(row.credential_ciphertext).not.toContain('sk-user-own-key');
    const [listed] = await runtime(ws.appKey);
    expect(listed!.credential).toEqual({ type: 'api_key', api_key: 'sk-user-own-key' });
  });

  it('points a caller without a token for a connector at its OAuth start, and still takes a given token', async () => {
    const ws = await userWorkspace('connector@example.com');
    await store.db
      .insertInto('integrations')
      .values({
        provider: 'calendar',
        name: 'Calendar',
        kind: 'connector',
        default_profile: 'user_oauth',
        supported_profiles: JSON.stringify(['user_oauth']),
      })
      .onConflict((oc) => oc.column('provider').doNothing())
      .execute();
    const refused = await asApp(ws.appKey, 'POST', '/api/connections', { provider: 'calendar' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      message:
        'Profile user_oauth is connected by OAuth: send a signed-in user to /api/oauth/calendar/start, or give a credential: { "access_token": "..." }',
      code: 'INVALID_REQUEST',
    });
    const given = await asApp(ws.appKey, 'POST', '/api/connections', {
      provider: 'calendar',
      credential: { access_token: 'token-got-elsewhere' },
    });
    expect(given.status).toBe(201);
    const { connection } = await given.json();
    // Renewing its token by PATCH without one names the reconnecting start.
    const patched = await asUser(ws.cookie, 'PATCH', `/api/connections/${connection.id}`, { credential: {} });
    expect(patched.status).toBe(400);
    expect((await patched.json()).message).toContain(
      `send a signed-in user to /api/oauth/calendar/start?connectionId=${connection.id}`,
    );
  });

  it('mints a Connection Key, shown once, that reaches its provider through the proxy', async () => {
    const ws = await userWorkspace('keys@example.com');
    const created = await (
      await asUser(ws.cookie, 'POST', '/api/connections', { provider: 'search' })
    ).json();
    const keys = `/api/connections/${created.connection.id}/keys`;
    // Its name follows the rule of every key name: no control characters.
    const bell = await asUser(ws.cookie, 'POST', keys, { name: 'ok\u0007bell' });
    expect(bell.status).toBe(400);
    expect((await bell.json()).message).toMatch(/name: must not contain control characters/);
    const minted = await asUser(ws.cookie, 'POST', keys, {});
    expect(minted.status).toBe(201);
    expect(minted.headers.get('cache-control')).toBe('no-store');
    const { key, prefix } = await minted.json();
    expect(key).toMatch(/^service_sk_/);
    expect(prefix).toBe(key.slice(0, 16));
    // No credit yet: the proxy knows the key and refuses for want of credit, not of access.
    const call = await fetch(`${server.url}/proxy/search/search`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(call.status).toBe(402);
  });

  it('moves status with events, and revocation unbinds, revokes keys and hides the connection', async () => {
    const owner = await userWorkspace('status@example.com');
    const ws = owner.cookie;
    const connect = async (provider: string) =>
      (await (await asUser(ws, 'POST', '/api/connections', { provider, app_id: owner.appId })).json())
        .connection.id as string;
    const tenant = {
      appId: owner.appId,
      appKey: owner.appKey,
      llmConnectionId: await connect('llm'),
      searchConnectionId: await connect('search'),
    };
    const path = `/api/connections/${tenant.llmConnectionId}`;
    const moved = await asUser(ws, 'PATCH', path, { status: 'needs_reauth', error_message: 'Token expired' });
    expect(moved.status).toBe(200);
    expect((await moved.json()).connection).toMatchObject({
      status: 'needs_reauth',
      error_message: 'Token expired',
    });
    expect((await runtime(tenant.appKey)).find((c) => c.id === tenant.llmConnectionId)?.status).toBe(
      'needs_reauth',
    );
    // Not connected: the proxy refuses the call.
    const refused = await fetch(`${server.url}/proxy/llm/v1/models`, {
      headers: { authorization: `Bearer ${tenant.appKey}` },
    });
    expect(refused.status).toBe(403);
    const key = await (await asUser(ws, 'POST', `${path}/keys`, {})).json();
    const revoked = await asUser(ws, 'DELETE', path);
    expect((await revoked.json()).connection.status).toBe('revoked');
    expect((await runtime(tenant.appKey)).map((c) => c.id)).toEqual([tenant.searchConnectionId]);
    const balance = await fetch(`${server.url}/api/billing/balance`, {
      headers: { authorization: `Bearer ${key.key}` },
    });
    expect(balance.status).toBe(401);
    expect(await kindsOf(tenant.appId)).toEqual([
      'connection.connected',
      'connection.connected',
      'connection.status_changed',
      'connection.changed',
      'connection.status_changed',
      'connection.disconnected',
    ]);
    const again = await asUser(ws, 'PATCH', path, { status: 'connected' });
    expect(again.status).toBe(409);
  });

  it('refuses to bind an exclusive connection bound to another app with 409', async () => {
    const ws = await userWorkspace('exclusive@example.com');
    const other = await store.db
      .insertInto('apps')
      .values({ tenant_id: ws.tenantId, slug: 'other', name: 'Other' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const { connection } = await (
      await asUser(ws.cookie, 'POST', '/api/connections', {
        provider: 'llm',
        exclusive: true,
        app_id: ws.appId,
      })
    ).json();
    const bind = await asUser(ws.cookie, 'POST', `/api/apps/${other.id}/connections`, {
      connection_id: connection.id,
    });
    expect(bind.status).toBe(409);
    expect((await bind.json()).code).toBe('CONFLICT');
    const unbind = await asUser(ws.cookie, 'DELETE', `/api/apps/${ws.appId}/connections/${connection.id}`);
    expect(unbind.status).toBe(200);
    const rebind = await asUser(ws.cookie, 'POST', `/api/apps/${other.id}/connections`, {
      connection_id: connection.id,
    });
    expect(rebind.status).toBe(201);
  });

  it('replays a create with the same Idempotency-Key and refuses the key with another body', async () => {
    const tenant = await createTenantFixture(server.platform);
    const send = (body: object) =>
      fetch(`${server.url}/api/connections`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tenant.appKey}`,
          'content-type': 'application/json',
          'idempotency-key': 'create-once',
        },
        body: JSON.stringify(body),
      });
    const first = await send({ provider: 'search' });
    const second = await send({ provider: 'search' });
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    for (const answer of [first, second]) expect(answer.headers.get('cache-control')).toBe('no-store');
    expect((await second.json()).connection.id).toBe((await first.json()).connection.id);
    expect((await runtime(tenant.appKey)).length).toBe(1);
    const conflict = await send({ provider: 'llm' });
    expect(conflict.status).toBe(409);
  });

  it('keeps an Idempotency-Key per caller: two apps, or an app and a user, sharing one each connect', async () => {
    const ws = await userWorkspace('shared-key@example.com');
    const second = await store.db
      .insertInto('apps')
      .values({ tenant_id: ws.tenantId, slug: 'second-tool', name: 'Second tool' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const secondKey = await server.platform.context.keys.issue({
      tenantId: ws.tenantId,
      kind: 'app',
      appId: second.id,
    });
    const header = { 'idempotency-key': 'setup-search' };
    const create = async (send: () => Promise<Response>) => {
      const response = await send();
      expect(response.status).toBe(201);
      expect(response.headers.get('idempotent-replayed')).toBeNull();
      return (await response.json()).connection.id as string;
    };
    const body = { provider: 'search' };
    const ids = [
      await create(() => asApp(ws.appKey, 'POST', '/api/connections', body, header)),
      await create(() => asApp(secondKey.key, 'POST', '/api/connections', body, header)),
      await create(() => asUser(ws.cookie, 'POST', '/api/connections', body, header)),
    ];
    expect(new Set(ids).size).toBe(3);
    expect((await runtime(ws.appKey)).map((c) => c.id)).toEqual([ids[0]]);
    expect((await runtime(secondKey.key)).map((c) => c.id)).toEqual([ids[1]]);
  });

  it('answers a live key of another kind 403 without counting it as a failed credential; an unknown key 401', async () => {
    const tenant = await createTenantFixture(server.platform);
    /** Failed credentials counted so far (every address: the test's is loopback). */
    const failures = async () =>
      (
        await store.db
          .selectFrom('rate_limit_hits')
          .select('hits')
          .where('bucket', 'like', 'failed-credential:%')
          .execute()
      ).reduce((sum, row) => sum + row.hits, 0);
    const before = await failures();
    for (const key of [tenant.connectionKey, tenant.cliKey]) {
      const response = await asApp(key, 'POST', '/api/connections', { provider: 'search' });
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({
        message: 'Only an App Key or a signed-in member makes connections',
        code: 'FORBIDDEN',
      });
    }
    // An unknown key is counted; once its count is written, any earlier one would be too.
    const unknown = await asApp('service_sk_unknown', 'POST', '/api/connections', { provider: 'search' });
    expect(unknown.status).toBe(401);
    const deadline = Date.now() + 2000;
    while ((await failures()) === before && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await failures()).toBe(before + 1);
    expect(await runtime(tenant.appKey)).toEqual([]);
  });

  it('answers bad input with a clear 4xx and changes nothing', async () => {
    const ws = await userWorkspace('bad-input@example.com');
    const cases: Array<[string, string, unknown, number, RegExp]> = [
      ['POST', '/api/connections', '{"provider":', 400, /valid JSON/],
      ['POST', '/api/connections', { provider: 42 }, 400, /provider/],
      ['POST', '/api/connections', {}, 400, /provider/],
      ['POST', '/api/connections', { provider: 'llm', surprise: true }, 400, /surprise|Unrecognized/i],
      ['POST', '/api/connections', { provider: 'nope' }, 400, /Unknown integration/],
      ['POST', '/api/connections', { provider: 'llm', profile: 'byok_static' }, 400, /needs a credential/],
      ['POST', '/api/connections', { provider: 'llm', credential: { api_key: 'x' } }, 400, /no credential/],
      ['POST', '/api/connections', { provider: 'llm', metadata: { big: 'x'.repeat(20_000) } }, 400, /16 KiB/],
      ['POST', '/api/connections', { provider: 'llm', pad: 'x'.repeat(70_000) }, 413, /too large/],
      ['PATCH', '/api/connections/not-a-uuid', { status: 'error' }, 404, /not found/],
      ['PATCH', '/api/connections/00000000-0000-4000-8000-000000000000', { status: 'bogus' }, 400, /status/],
      ['POST', `/api/apps/${ws.appId}/connections`, { connection_id: 'x' }, 404, /not found/],
    ];
    for (const [method, path, body, status, message] of cases) {
      const response = await asUser(ws.cookie, method, path, body);
      expect(response.status, `${method} ${path} ${JSON.stringify(body).slice(0, 60)}`).toBe(status);
      expect((await response.json()).message).toMatch(message);
    }
    const rows = await store.db
      .selectFrom('connections')
      .select('id')
      .where('tenant_id', '=', ws.tenantId)
      .execute();
    expect(rows).toEqual([]);
  });

  it('refuses other tenants, viewers, cross-origin and non-JSON cookie writes, and anonymous callers', async () => {
    const owner = await userWorkspace('owner-a@example.com');
    const stranger = await userWorkspace('stranger@example.com');
    const { connection } = await (
      await asUser(owner.cookie, 'POST', '/api/connections', { provider: 'llm', app_id: owner.appId })
    ).json();
    expect((await asUser(stranger.cookie, 'GET', `/api/connections/${connection.id}`)).status).toBe(404);
    expect((await asUser(stranger.cookie, 'DELETE', `/api/connections/${connection.id}`)).status).toBe(404);
    expect(
      (await asApp(stranger.appKey, 'POST', '/api/connections', { provider: 'llm', app_id: owner.appId }))
        .status,
    ).toBe(403);
    const crossSite = await asUser(owner.cookie, 'DELETE', `/api/connections/${connection.id}`, undefined, {
      origin: 'https://evil.example',
    });
    expect(crossSite.status).toBe(403);
    const form = await asUser(owner.cookie, 'POST', '/api/connections', 'provider=llm', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.status).toBe(415);
    await store.db
      .updateTable('memberships')
      .set({ role: 'viewer' })
      .where('tenant_id', '=', owner.tenantId)
      .execute();
    expect((await asUser(owner.cookie, 'GET', '/api/connections')).status).toBe(200);
    expect((await asUser(owner.cookie, 'DELETE', `/api/connections/${connection.id}`)).status).toBe(403);
    const anonymous = await fetch(`${server.url}/api/connections`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ message: 'Unauthorized' });
    // Nothing above changed the connection.
    expect((await runtime(owner.appKey))[0]?.status).toBe('connected');
  });
});
