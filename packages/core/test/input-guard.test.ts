/**
 * Bad input never reaches a 500, over real HTTP: the shared input guard on the platform (its
 * proxy path included) and the wire, bodies capped while streaming, identity tokens checked for
 * issuer and audience, failed credentials throttled per address, and an unreadable stored
 * credential confined to its own connection.
 *
 * @see docs/errors.md "Input rules"
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNREADABLE_CREDENTIAL } from '../src/connections/runtime.js';
import type { Service } from '../src/wire/create-service.js';
import { type FakeIdp, startFakeIdp } from './support/fake-idp.js';
import {
  createMeteredTenant,
  type MeteredWorld,
  seedProviders,
  startMeteredWorld,
} from './support/metered.js';
import { type RunningPlatform, signedInOwner, startPlatform } from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';
import { testService } from './wire/support/wire.js';

describe('input guard', () => {
  let world: MeteredWorld;
  let server: RunningPlatform;
  let store: TestStore;

  beforeAll(async () => {
    world = await startMeteredWorld();
    ({ server, store } = world);
  });
  afterAll(async () => world?.close());

  /** A signed-in owner of a fresh workspace with an app: cookie, app id and App Key. */
  const owner = (email: string) => signedInOwner(server, email);

  const send = (path: string, init: RequestInit & { json?: string } = {}) => {
    const { json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return fetch(`${server.url}${path}`, { ...rest, headers, ...(json !== undefined ? { body: json } : {}) });
  };

  it('answers 400 in the flat shape for NUL and lone surrogates in any string of a dashboard body', async () => {
    const { cookie } = await owner('guard-body@example.com');
    const cases = [
      [{ provider: 'llm', display_name: 'a\u0000b' }, 'body.display_name: contains a NUL character'],
      [
        { provider: 'llm', display_name: 'a\u202eb' },
        'display_name: must not contain bidirectional text controls',
      ],
      [
        { provider: 'llm', display_name: 'a\ud800b' },
        'body.display_name: contains an unpaired UTF-16 surrogate',
      ],
      [
        { provider: 'llm', metadata: { note: ['ok', 'x\u0000'] } },
        'body.metadata.note.1: contains a NUL character',
      ],
      [
        { provider: 'llm', metadata: { 'k\udc00': 1 } },
        'body.metadata: a key contains an unpaired UTF-16 surrogate',
      ],
    ] as const;
    for (const [body, message] of cases) {
      const response = await send('/api/connections', {
        method: 'POST',
        headers: { cookie },
        json: JSON.stringify(body),
      });
      expect(response.status, message).toBe(400);
      expect(await response.json()).toEqual({ message, code: 'INVALID_REQUEST' });
    }
  });

  it('refuses a body that is not UTF-8 with 400, storing nothing in its place', async () => {
    const { cookie } = await owner('guard-utf8@example.com');
    // `{"name":"` + 0xFF 0xFE + `"}`: decoded leniently, the name would be kept as two U+FFFD.
    const bytes = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const before = await (await send('/api/tenants/me', { headers: { cookie } })).json();
    const response = await fetch(`${server.url}/api/tenants/me`, {
      method: 'PATCH',
      headers: { cookie, origin: server.url, 'content-type': 'application/json' },
      body: bytes,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      message: 'Request body must be UTF-8 text',
      code: 'INVALID_REQUEST',
    });
    expect(await (await send('/api/tenants/me', { headers: { cookie } })).json()).toEqual(before);
  });

  it('refuses metadata nested 5,000 deep in a 10 KB body with 400, not a stack overflow', async () => {
    const { cookie } = await owner('guard-deep@example.com');
    const json = `{"provider":"llm","metadata":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`;
    expect(json.length).toBeLessThan(64 * 1024);
    const response = await send('/api/connections', { method: 'POST', headers: { cookie }, json });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      message: 'body nests deeper than 32 levels',
      code: 'INVALID_REQUEST',
    });
  });

  it('answers 400 for %00 in path segments and queries, in each route’s shape', async () => {
    const { cookie, appKey } = await owner('guard-path@example.com');
    const proxied = await send('/proxy/web-search%00/v1/search', {
      headers: { authorization: `Bearer ${appKey}` },
    });
    expect(proxied.status).toBe(400);
    expect(proxied.headers.get('service-error-code')).toBe('validation_failed');
    expect(await proxied.json()).toEqual({
      error: { code: 'validation_failed', message: 'Invalid request: path contains a NUL character' },
    });
    const usage = await send('/api/integrations/%00/usage', { headers: { cookie } });
    expect(usage.status).toBe(400);
    expect(await usage.json()).toEqual({
      message: 'Invalid request: path contains a NUL character',
      code: 'INVALID_REQUEST',
    });
    const balance = await send('/api/billing/balance?x=%00', {
      headers: { authorization: `Bearer ${appKey}` },
    });
    expect(balance.status).toBe(400);
    expect(await balance.json()).toEqual({
      error: { message: 'Invalid request: query contains a NUL character' },
    });
    const malformed = await send('/api/connections/%ED%A0%80', { headers: { cookie } });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).message).toBe('Invalid request: path has a malformed percent-encoding');
    // Refused before any route, still never kept by a cache (the keys' answers all are no-store).
    const key = await send('/api/keys/%00', { method: 'DELETE', headers: { cookie } });
    expect(key.status).toBe(400);
    expect(key.headers.get('cache-control')).toBe('no-store');
  });

  it('refuses an API query parameter given twice, 400 in the route’s shape, rather than reading one', async () => {
    const { cookie, appId, appKey } = await owner('guard-repeat@example.com');
    const usage = await send('/api/billing/usage?days=3&days=90', { headers: { cookie } });
    expect(usage.status).toBe(400);
    expect(await usage.json()).toEqual({
      message: 'Invalid request: query parameter days is repeated',
      code: 'INVALID_REQUEST',
    });
    const range = await send(`/api/deployments/${appId}/usage?range=1h&range=30d`, { headers: { cookie } });
    expect(range.status).toBe(400);
    const balance = await send('/api/billing/balance?x=1&x=2', {
      headers: { authorization: `Bearer ${appKey}` },
    });
    expect(balance.status).toBe(400);
    expect(await balance.json()).toEqual({
      error: { message: 'Invalid request: query parameter x is repeated' },
    });
    // One of each is read as before.
    expect((await send('/api/billing/usage?days=3', { headers: { cookie } })).status).toBe(200);
  });

  it('reads ?range=constructor (and other inherited names) as an unknown range: the validation 400', async () => {
    const { cookie, appId } = await owner('guard-range@example.com');
    for (const range of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const response = await send(`/api/deployments/${appId}/usage?range=${range}`, { headers: { cookie } });
      expect(response.status, range).toBe(400);
      expect(await response.json()).toEqual({
        message: 'range must be one of 1h, 24h, 7d, 30d',
        code: 'INVALID_REQUEST',
      });
    }
    expect((await send(`/api/deployments/${appId}/usage?range=7d`, { headers: { cookie } })).status).toBe(
      200,
    );
  });

  it('refuses a NUL in an App Key name and in the development IdP’s name, 400', async () => {
    const { cookie, appKey } = await owner('guard-key@example.com');
    const created = await send('/api/connections', {
      method: 'POST',
      headers: { authorization: `Bearer ${appKey}` },
      json: JSON.stringify({ provider: 'search' }),
    });
    const { connection } = await created.json();
    const key = await send(`/api/connections/${connection.id}/keys`, {
      method: 'POST',
      headers: { cookie },
      json: JSON.stringify({ name: 'ci\u0000' }),
    });
    expect(key.status).toBe(400);
    const token = await send('/auth/v1/token', {
      method: 'POST',
      json: JSON.stringify({ email: 'nul@example.com', name: 'Ada\u0000' }),
    });
    expect(token.status).toBe(400);
    expect((await token.json()).message).toBe('body.name: contains a NUL character');
    const form = await send('/auth/v1/sign-in', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: 'nul@example.com', name: 'Ada\u0000', return_to: '/' }).toString(),
    });
    expect(form.status).toBe(400);
    expect(await form.text()).toContain('name must not hold a NUL');
  });

  it('signs in with a token whose name claim holds a NUL, ignoring the name', async () => {
    const issued = await server.platform.devIdp!.issueToken({
      email: 'nul-name@example.com',
      name: 'x\u0000y',
    });
    const response = await send('/api/auth/session', {
      method: 'POST',
      headers: { authorization: `Bearer ${issued.token}` },
    });
    expect(response.status).toBe(200);
    const user = await store.db
      .selectFrom('users')
      .select(['email', 'name'])
      .where('email', '=', 'nul-name@example.com')
      .executeTakeFirstOrThrow();
    expect(user.name).toBeNull();
  });

  it('refuses a chunked body past 64 KiB at the cap, without reading the rest', async () => {
    const { cookie } = await owner('guard-big@example.com');
    let sent = 0;
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        // 300 MB if the server read it all; it must stop long before.
        if (sent >= 300 * 1024 * 1024) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(
          sent === chunk.byteLength ? new TextEncoder().encode('{"metadata":{"a":"') : chunk,
        );
      },
    });
    const response = await fetch(`${server.url}/api/connections`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    // The rest of the body is never read: the connection ends, so the client does not send its
    // next request on it.
    expect(response.headers.get('connection')).toBe('close');
    expect(await response.json()).toEqual({ message: 'Request body too large', code: 'INVALID_REQUEST' });
    expect(sent).toBeLessThan(64 * 1024 * 1024);
  });

  it('answers a tool 200 with its other connections when one stored credential does not open, marking that one error once', async () => {
    const { cookie, appId, appKey } = await owner('guard-sealed@example.com');
    const create = (body: object) =>
      send('/api/connections', {
        method: 'POST',
        headers: { authorization: `Bearer ${appKey}` },
        json: JSON.stringify(body),
      });
    const managed = (await (await create({ provider: 'llm' })).json()).connection;
    const byok = (
      await (
        await create({ provider: 'search', profile: 'byok_static', credential: { api_key: 'sk-own' } })
      ).json()
    ).connection;
    // Sealed under a key this platform does not hold (a rotation gone wrong, a damaged row).
    await store.db
      .updateTable('connections')
      .set({ credential_ciphertext: 'v1.AAAA.BBBB.CCCC' })
      .where('id', '=', byok.id)
      .execute();
    const read = async () => {
      const response = await send('/api/deployments/me/connections', {
        headers: { authorization: `Bearer ${appKey}` },
      });
      expect(response.status).toBe(200);
      return (await response.json()).connections as Array<Record<string, unknown>>;
    };
    for (let i = 0; i < 2; i++) {
      const connections = await read();
      expect(connections.find((c) => c.id === managed.id)).toMatchObject({
        status: 'connected',
        credential: { type: 'proxy' },
      });
      expect(connections.find((c) => c.id === byok.id)).toMatchObject({
        status: 'error',
        credential: null,
        error_message: UNREADABLE_CREDENTIAL,
      });
    }
    const stored = await send(`/api/connections/${byok.id}`, { headers: { cookie } });
    expect((await stored.json()).connection).toMatchObject({
      status: 'error',
      error_message: UNREADABLE_CREDENTIAL,
    });
    const events = await store.db
      .selectFrom('app_events')
      .select('payload')
      .where('app_id', '=', appId)
      .where('kind', '=', 'connection.status_changed')
      .execute();
    expect(events).toHaveLength(1);
    expect(JSON.stringify(events[0]!.payload)).toContain('"status":"error"');
  });
});

describe('wire input guard', () => {
  let store: TestStore;
  let service: Service;
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    store = await openTestStore();
    service = await testService(store);
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: service.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/service`;
    close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  });
  afterAll(async () => {
    await close?.();
    await service?.close();
    await store?.dispose();
  });

  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${url}${path}`, { ...init, headers: { 'x-test-user': 'ada', ...init.headers } });

  it('answers validation_failed for %00 in threads, runs and approvals ids and in queries', async () => {
    for (const [method, path] of [
      ['GET', '/threads/%00'],
      ['DELETE', '/threads/%00'],
      ['GET', '/runs/%00'],
      ['POST', '/runs/%00/stop'],
      ['GET', '/approvals/%00'],
      ['GET', '/runs?thread=%00'],
    ] as const) {
      const response = await call(path, { method, headers: { 'content-type': 'application/json' } });
      expect(response.status, `${method} ${path}`).toBe(400);
      expect(response.headers.get('service-error-code')).toBe('validation_failed');
      expect((await response.json()).error.code).toBe('validation_failed');
    }
  });

  it('answers validation_failed for a NUL in a body string and for nesting past the cap', async () => {
    const post = (body: string) =>
      call('/approvals/decide', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const nul = await post(JSON.stringify({ decisions: [{ id: 'a\u0000', decision: 'approve' }] }));
    expect(nul.status).toBe(400);
    expect(await nul.json()).toEqual({
      error: { code: 'validation_failed', message: 'body.decisions.0.id: contains a NUL character' },
    });
    const notUtf8 = await call('/approvals/decide', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.concat([
        Buffer.from('{"decisions":[{"id":"'),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('"}]}'),
      ]),
    });
    expect(notUtf8.status).toBe(400);
    expect(await notUtf8.json()).toEqual({
      error: { code: 'invalid_json', message: 'The request body is not valid UTF-8.' },
    });
    const deep = await post(`{"decisions":${'['.repeat(5000)}${']'.repeat(5000)}}`);
    expect(deep.status).toBe(400);
    expect((await deep.json()).error.message).toBe('body nests deeper than 32 levels');
  });
});

describe('identity token issuer and audience', () => {
  let idp: FakeIdp;
  let store: TestStore;
  let configured: RunningPlatform;
  let defaults: RunningPlatform;

  beforeAll(async () => {
    idp = await startFakeIdp();
    store = await openTestStore();
    defaults = await startPlatform(store, { idpUrl: idp.url });
    configured = await startPlatform(store, {
      idpUrl: idp.url,
      env: { SERVICE_IDP_ISSUER: 'https://issuer.example/auth/v1', SERVICE_IDP_AUDIENCE: 'platform' },
    });
  });
  afterAll(async () => {
    await configured?.close();
    await defaults?.close();
    await idp?.close();
    await store?.dispose();
  });

  const signIn = async (platform: RunningPlatform, token: string) =>
    (
      await fetch(`${platform.url}/api/auth/session`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      })
    ).status;

  it('accepts the IdP’s own issuer and the audience authenticated by default, and nothing else', async () => {
    expect(await signIn(defaults, await idp.sign({ sub: 'iss-ok' }))).toBe(200);
    expect(
      await signIn(defaults, await idp.sign({ sub: 'iss-1', iss: 'https://evil.example/auth/v1' })),
    ).toBe(401);
    expect(await signIn(defaults, await idp.sign({ sub: 'iss-2', aud: 'another-service' }))).toBe(401);
    expect(await signIn(defaults, await idp.sign({ sub: 'iss-3', iss: null }))).toBe(401);
    expect(await signIn(defaults, await idp.sign({ sub: 'iss-4', aud: null }))).toBe(401);
  });

  it('checks the configured issuer and audience instead', async () => {
    const good = { iss: 'https://issuer.example/auth/v1', aud: 'platform' };
    expect(await signIn(configured, await idp.sign({ sub: 'cfg-ok', ...good }))).toBe(200);
    expect(await signIn(configured, await idp.sign({ sub: 'cfg-1' }))).toBe(401);
    expect(await signIn(configured, await idp.sign({ sub: 'cfg-2', ...good, aud: 'authenticated' }))).toBe(
      401,
    );
  });

  it('refuses a token whose subject holds a NUL, 401', async () => {
    expect(await signIn(defaults, await idp.sign({ sub: 'a\u0000b' }))).toBe(401);
  });
});

describe('failed credentials', () => {
  let world: MeteredWorld;
  let limited: RunningPlatform;

  beforeAll(async () => {
    world = await startMeteredWorld();
    limited = await startPlatform(world.store, {
      rateLimits: { failedCredentials: { limit: 3, windowMs: 60_000 } },
    });
    await seedProviders(limited.platform, world.upstream.url);
  });
  afterAll(async () => {
    await limited?.close();
    await world?.close();
  });

  type Shaped = { message?: string; error: { message?: string; code?: string } };
  const bad = 'service_sk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

  it('answers 429 past the limit on the proxy, then refuses even a good key from that address', async () => {
    const tenant = await createMeteredTenant(limited.platform, 1_000_000);
    const proxy = (key: string) =>
      fetch(`${limited.url}/proxy/search/v1/search`, { headers: { authorization: `Bearer ${key}` } });
    for (let i = 0; i < 3; i++) expect((await proxy(bad)).status).toBe(401);
    const refused = await proxy(bad);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    const body = await refused.json();
    expect(body.error).toMatchObject({ code: 'rate_limited' });
    expect(body.error.retry_after).toBeGreaterThan(0);
    // A correct guess is refused like a wrong one: the address learns nothing.
    expect((await proxy(tenant.appKey)).status).toBe(429);
  });

  it('answers 429 in each route’s own shape once the address is over the limit', async () => {
    const shapes = [
      [
        '/api/deployments/me/connections',
        (b: Shaped) => typeof b.error.message === 'string' && !b.error.code,
      ],
      ['/api/deployments/me/events', (b: Shaped) => b.error.code === 'rate_limited'],
      ['/api/billing/balance', (b: Shaped) => typeof b.error.message === 'string' && !b.error.code],
      ['/api/cli/balance', (b: Shaped) => typeof b.message === 'string'],
      ['/api/cli/whoami', (b: Shaped) => typeof b.message === 'string'],
    ] as const;
    for (const [path, shaped] of shapes) {
      const response = await fetch(`${limited.url}${path}`, { headers: { authorization: `Bearer ${bad}` } });
      expect(response.status, path).toBe(429);
      expect(shaped(await response.json()), path).toBe(true);
    }
    const connections = await fetch(`${limited.url}/api/connections`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bad}`, 'content-type': 'application/json' },
      body: '{"provider":"llm"}',
    });
    expect(connections.status).toBe(429);
    expect(typeof (await connections.json()).message).toBe('string');
  });

  it('leaves other platforms’ limits alone: a default limit of 30 lets a few failures through as 401', async () => {
    const response = await fetch(`${world.server.url}/proxy/search/v1/search`, {
      headers: { authorization: `Bearer ${bad}` },
    });
    expect(response.status).toBe(401);
  });
});
