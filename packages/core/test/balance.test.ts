/**
 * Black-box tests of the three balance endpoints over real HTTP.
 */
import { SignJWT } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../src/billing/ledger.js';
import { type FakeIdp, startFakeIdp } from './support/fake-idp.js';
import {
  createTenantFixture,
  type RunningPlatform,
  startPlatform,
  type TenantFixture,
} from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

let store: TestStore;
let idp: FakeIdp;
let server: RunningPlatform;
let tenant: TenantFixture;

const NO_LIMITS = {
  billingBalance: { limit: 1e9, windowMs: 60_000 },
  v1Balance: { limit: 1e9, windowMs: 60_000 },
  cliBalance: { limit: 1e9, windowMs: 60_000 },
};

beforeAll(async () => {
  store = await openTestStore();
  idp = await startFakeIdp();
  server = await startPlatform(store, {
    idpUrl: idp.url,
    baseUrl: 'https://api.example.com',
    rateLimits: NO_LIMITS,
  });
  tenant = await createTenantFixture(server.platform, 12_345_678);
});

afterAll(async () => {
  await server?.close();
  await idp?.close();
  await store?.dispose();
});

const get = (path: string, headers: Record<string, string> = {}, at: RunningPlatform = server) =>
  fetch(`${at.url}${path}`, { headers });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function expectJson(response: Response, status: number, body: unknown) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await response.json()).toEqual(body);
}

it.each(['/api/billing/balance', '/api/v1/balance', '/api/cli/balance'])(
  'keeps every answer of %s out of caches, refusals included',
  async (path) => {
    for (const response of [
      await get(path),
      await get(path, bearer('service_sk_not-a-key')),
      await get(path, bearer(tenant.appKey)),
    ]) {
      expect(response.headers.get('cache-control')).toBe('no-store');
      await response.arrayBuffer();
    }
  },
);

it('answers a fault of each balance endpoint with the generic 500 body of its shape', async () => {
  const own = await openTestStore();
  const broken = await startPlatform(own, { baseUrl: 'https://api.example.com', rateLimits: NO_LIMITS });
  const holder = await createTenantFixture(broken.platform, 1);
  try {
    // A fault that is not the store being away (a table gone): the error handler's 500.
    await sql`alter table wallets rename to wallets_gone`.execute(own.db);
    await expectJson(await get('/api/billing/balance', bearer(holder.appKey), broken), 500, {
      error: { message: 'Internal server error' },
    });
    await expectJson(await get('/api/v1/balance', bearer(holder.appKey), broken), 500, {
      error: { message: 'Internal server error' },
    });
    await expectJson(await get('/api/cli/balance', bearer(holder.cliKey), broken), 500, {
      message: 'Internal server error',
    });
  } finally {
    await broken.close();
    await own.dispose();
  }
});

describe('GET /api/billing/balance', () => {
  const path = '/api/billing/balance';
  const ok = {
    credits_remaining_micros: 12_345_678,
    currency: 'USD',
    top_up_url: 'https://api.example.com/billing',
  };

  it('answers an App Key with the balance record in micros', async () => {
    const response = await get(path, bearer(tenant.appKey));
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    await expectJson(response, 200, ok);
  });

  it('answers a Connection Key and a CLI key', async () => {
    await expectJson(await get(path, bearer(tenant.connectionKey)), 200, ok);
    await expectJson(await get(path, bearer(tenant.cliKey)), 200, ok);
  });

  it('answers an ES256 or RS256 identity JWT with the balance of the subject’s tenant', async () => {
    const es = await idp.sign({ sub: tenant.subject, email: 'x@example.test' });
    await expectJson(await get(path, bearer(es)), 200, ok);
    const rs = await idp.sign({ sub: tenant.subject }, { alg: 'RS256' });
    await expectJson(await get(path, bearer(rs)), 200, ok);
  });

  it('ensures a tenant with an empty wallet for a JWT subject seen for the first time', async () => {
    const token = await idp.sign({ sub: '7d0f6a8e-0000-4000-8000-000000000001', email: 'new@example.test' });
    await expectJson(await get(path, bearer(token)), 200, { ...ok, credits_remaining_micros: 0 });
    const user = await store.db
      .selectFrom('users')
      .select(['default_tenant_id', 'email'])
      .where('idp_subject', '=', '7d0f6a8e-0000-4000-8000-000000000001')
      .executeTakeFirstOrThrow();
    expect(user.email).toBe('new@example.test');
    expect(user.default_tenant_id).toBeTruthy();
  });

  it('refuses a session cookie: 401 Missing Bearer token', async () => {
    await expectJson(await get(path, { cookie: 'service_session=anything' }), 401, {
      error: { message: 'Missing Bearer token' },
    });
  });

  it('answers 401 Missing Bearer token without an Authorization header or with another scheme', async () => {
    await expectJson(await get(path), 401, { error: { message: 'Missing Bearer token' } });
    await expectJson(await get(path, { authorization: `Basic ${btoa('a:b')}` }), 401, {
      error: { message: 'Missing Bearer token' },
    });
    await expectJson(await get(path, { authorization: 'Bearer' }), 401, {
      error: { message: 'Missing Bearer token' },
    });
  });

  const invalid = { error: { message: 'Invalid or revoked token' } };

  it('answers 401 Invalid or revoked token for garbage and for unknown keys', async () => {
    await expectJson(await get(path, bearer('garbage')), 401, invalid);
    await expectJson(await get(path, bearer(`service_sk_${'A'.repeat(43)}`)), 401, invalid);
    await expectJson(await get(path, bearer('a.b.c')), 401, invalid);
  });

  it('answers 401 for a revoked key', async () => {
    const extra = await createTenantFixture(server.platform);
    await expectJson(await get(path, bearer(extra.appKey)), 200, { ...ok, credits_remaining_micros: 0 });
    await server.platform.context.keys.revoke(extra.appKeyId);
    await expectJson(await get(path, bearer(extra.appKey)), 401, invalid);
  });

  it('answers 401 for an expired JWT', async () => {
    const token = await idp.sign({ sub: tenant.subject }, { expiresIn: Math.floor(Date.now() / 1000) - 60 });
    await expectJson(await get(path, bearer(token)), 401, invalid);
  });

  it('answers 401 for a JWT signed by a key the JWKS does not publish', async () => {
    await expectJson(
      await get(path, bearer(await idp.signWithUnknownKey({ sub: tenant.subject }))),
      401,
      invalid,
    );
  });

  it('answers 401 for an alg:none JWT and for an HS256 JWT', async () => {
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const claims = { sub: tenant.subject, exp: Math.floor(Date.now() / 1000) + 600 };
    const none = `${encode({ alg: 'none', typ: 'JWT' })}.${encode(claims)}.`;
    await expectJson(await get(path, bearer(none)), 401, invalid);
    const noneWithSignature = `${encode({ alg: 'none', typ: 'JWT' })}.${encode(claims)}.${encode({ x: 1 })}`;
    await expectJson(await get(path, bearer(noneWithSignature)), 401, invalid);
    const hs = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: 'es-1' })
      .sign(new TextEncoder().encode('x'.repeat(32)));
    await expectJson(await get(path, bearer(hs)), 401, invalid);
  });

  it('clamps an overdrawn wallet at zero', async () => {
    const overdrawn = await createTenantFixture(server.platform, 1_000);
    await post(store.db, {
      tenantId: overdrawn.tenantId,
      amountMicros: -5_000,
      kind: 'usage',
      idempotencyKey: 'overdraw',
    });
    await expectJson(await get(path, bearer(overdrawn.appKey)), 200, { ...ok, credits_remaining_micros: 0 });
  });

  it('answers a suspended tenant with 200', async () => {
    const suspended = await createTenantFixture(server.platform, 2_000_000);
    await store.db
      .updateTable('tenants')
      .set({ status: 'suspended' })
      .where('id', '=', suspended.tenantId)
      .execute();
    await expectJson(await get(path, bearer(suspended.appKey)), 200, {
      ...ok,
      credits_remaining_micros: 2_000_000,
    });
  });
});

describe('GET /api/v1/balance', () => {
  const path = '/api/v1/balance';

  it('answers an App Key, a Connection Key and a JWT with balance_usd and tenant_id', async () => {
    const body = { balance_usd: 12.35, tenant_id: tenant.tenantId };
    await expectJson(await get(path, bearer(tenant.appKey)), 200, body);
    await expectJson(await get(path, bearer(tenant.connectionKey)), 200, body);
    await expectJson(await get(path, bearer(await idp.sign({ sub: tenant.subject }))), 200, body);
  });

  it('keeps a negative balance, rounded to two decimals', async () => {
    const overdrawn = await createTenantFixture(server.platform, 1_000_000);
    await post(store.db, {
      tenantId: overdrawn.tenantId,
      amountMicros: -3_456_789,
      kind: 'usage',
      idempotencyKey: 'overdraw',
    });
    await expectJson(await get(path, bearer(overdrawn.appKey)), 200, {
      balance_usd: -2.46,
      tenant_id: overdrawn.tenantId,
    });
  });

  it('answers a tenant with no wallet row with 0', async () => {
    const bare = await createTenantFixture(server.platform);
    await store.db.deleteFrom('wallets').where('tenant_id', '=', bare.tenantId).execute();
    await expectJson(await get(path, bearer(bare.appKey)), 200, { balance_usd: 0, tenant_id: bare.tenantId });
  });

  it('uses the nested error body', async () => {
    await expectJson(await get(path), 401, { error: { message: 'Missing Bearer token' } });
    await expectJson(await get(path, bearer('nope')), 401, {
      error: { message: 'Invalid or revoked token' },
    });
    await expectJson(await get(path, { cookie: 'service_session=x' }), 401, {
      error: { message: 'Missing Bearer token' },
    });
  });
});

describe('GET /api/cli/balance', () => {
  const path = '/api/cli/balance';

  it('answers App, Connection and CLI keys with balance_usd only', async () => {
    for (const key of [tenant.appKey, tenant.connectionKey, tenant.cliKey]) {
      await expectJson(await get(path, bearer(key)), 200, { balance_usd: 12.35 });
    }
  });

  it('refuses a valid identity JWT as an invalid API key', async () => {
    const token = await idp.sign({ sub: tenant.subject });
    await expectJson(await get(path, bearer(token)), 401, { message: 'Invalid or revoked API key' });
  });

  it('uses the flat error body', async () => {
    await expectJson(await get(path), 401, { message: 'Missing Bearer token' });
    await expectJson(await get(path, bearer('garbage')), 401, { message: 'Invalid or revoked API key' });
    await expectJson(await get(path, { cookie: 'service_session=x' }), 401, {
      message: 'Missing Bearer token',
    });
  });

  it('answers a revoked key with 401', async () => {
    const extra = await createTenantFixture(server.platform);
    await server.platform.context.keys.revoke(extra.appKeyId);
    await expectJson(await get(path, bearer(extra.appKey)), 401, { message: 'Invalid or revoked API key' });
  });

  it('sends no CORS headers and has no OPTIONS handler', async () => {
    const response = await get(path, { ...bearer(tenant.appKey), origin: 'https://app.example.com' });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${server.url}${path}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
    });
    expect(preflight.status).toBe(404);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('CORS on the browser-callable balance endpoints', () => {
  for (const path of ['/api/billing/balance', '/api/v1/balance']) {
    it(`${path} reflects an own-domain origin with Vary: Origin`, async () => {
      const response = await get(path, { ...bearer(tenant.appKey), origin: 'https://dashboard.example.com' });
      expect(response.headers.get('access-control-allow-origin')).toBe('https://dashboard.example.com');
      expect(response.headers.get('vary')).toMatch(/Origin/);
    });

    it(`${path} gives * to a foreign origin, also on errors`, async () => {
      const response = await get(path, { ...bearer(tenant.appKey), origin: 'https://evil.example.net' });
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      const denied = await get(path, { origin: 'https://notexample.com' });
      expect(denied.status).toBe(401);
      expect(denied.headers.get('access-control-allow-origin')).toBe('*');
    });

    it(`${path} carries CORS headers and exposes Retry-After on a 429`, async () => {
      const own = await openTestStore();
      const limited = await startPlatform(own, {
        baseUrl: 'https://api.example.com',
        rateLimits: {
          ...NO_LIMITS,
          billingBalance: { limit: 1, windowMs: 60_000 },
          v1Balance: { limit: 1, windowMs: 60_000 },
        },
      });
      try {
        const origin = { origin: 'https://app.example.com' };
        await fetch(`${limited.url}${path}`, { headers: origin });
        const refused = await fetch(`${limited.url}${path}`, { headers: origin });
        expect(refused.status).toBe(429);
        expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(refused.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
        expect(refused.headers.get('access-control-expose-headers')).toBe('Retry-After');
      } finally {
        await limited.close();
        await own.dispose();
      }
    });

    it(`${path} carries CORS headers on a fault answered by the platform's error handler`, async () => {
      const own = await openTestStore();
      const broken = await startPlatform(own, { baseUrl: 'https://api.example.com', rateLimits: NO_LIMITS });
      const stranger = await createTenantFixture(broken.platform, 1);
      try {
        // The store goes away under the platform: the key lookup throws, the error handler answers.
        await own.dispose();
        const response = await get(
          path,
          { ...bearer(stranger.appKey), origin: 'https://evil.example.net' },
          broken,
        );
        expect(response.status).toBeGreaterThanOrEqual(500);
        expect(response.headers.get('access-control-allow-origin')).toBe('*');
        expect(response.headers.get('access-control-expose-headers')).toBe('Retry-After');
      } finally {
        await broken.close().catch(() => {});
      }
    });

    it(`${path} answers a preflight with the allowed methods and headers`, async () => {
      const response = await fetch(`${server.url}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example.com',
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'authorization',
        },
      });
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(response.headers.get('access-control-allow-methods')).toBe('GET, OPTIONS');
      expect(response.headers.get('access-control-allow-headers')).toBe('Authorization, Content-Type');
      expect(response.headers.get('vary')).toMatch(/Origin/);
    });
  }
});
