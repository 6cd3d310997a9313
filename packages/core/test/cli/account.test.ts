/**
 * `GET /api/cli/whoami` and `POST /api/cli/logout` over real HTTP: what `service whoami` and
 * `service logout` call with the stored key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTenantFixture,
  type RunningPlatform,
  startPlatform,
  type TenantFixture,
} from '../support/platform.js';
import { openTestStore, type TestStore } from '../support/stores.js';

let store: TestStore;
let running: RunningPlatform;
let tenant: TenantFixture;

beforeAll(async () => {
  store = await openTestStore();
  running = await startPlatform(store);
  tenant = await createTenantFixture(running.platform, 2_500_000);
});
afterAll(async () => {
  await running?.close();
  await store?.dispose();
});

const call = (method: string, path: string, token?: string) =>
  fetch(`${running.url}${path}`, {
    method,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });

async function devIdpToken(email: string): Promise<string> {
  const response = await fetch(`${running.url}/auth/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  return ((await response.json()) as { access_token: string }).access_token;
}

describe('GET /api/cli/whoami', () => {
  it('names the account, tenant and key of a CLI key', async () => {
    const response = await call('GET', '/api/cli/whoami', tenant.cliKey);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const tenantRow = await store.db
      .selectFrom('tenants')
      .select('name')
      .where('id', '=', tenant.tenantId)
      .executeTakeFirstOrThrow();
    expect(await response.json()).toEqual({
      tenant: { id: tenant.tenantId, name: tenantRow.name },
      user: { email: `${tenant.subject}@example.test`, name: null },
      app: null,
      key: {
        kind: 'cli',
        prefix: tenant.cliKey.slice(0, 16),
        created_at: expect.stringMatching(/Z$/),
      },
    });
  });

  it('names the app of an App Key, with no user', async () => {
    const body = await (await call('GET', '/api/cli/whoami', tenant.appKey)).json();
    expect(body).toMatchObject({
      user: null,
      app: { id: tenant.appId, slug: 'test-app', name: 'Test app' },
      key: { kind: 'app' },
    });
  });

  it('answers flat 401s for a missing, unknown or revoked key and for any JWT', async () => {
    const cases: Array<[string | undefined, string]> = [
      [undefined, 'Missing Bearer token'],
      [`service_sk_${'A'.repeat(43)}`, 'Invalid or revoked API key'],
      ['not-a-key', 'Invalid or revoked API key'],
      [await devIdpToken('whoami-jwt@example.test'), 'Invalid or revoked API key'],
    ];
    for (const [token, message] of cases) {
      const response = await call('GET', '/api/cli/whoami', token);
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ message });
    }
  });
});

describe('POST /api/cli/logout', () => {
  it('revokes the presented CLI key: it then gets 401 everywhere', async () => {
    const own = await createTenantFixture(running.platform);
    expect((await call('GET', '/api/cli/balance', own.cliKey)).status).toBe(200);
    const response = await call('POST', '/api/cli/logout', own.cliKey);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ revoked: true });
    expect((await call('GET', '/api/cli/balance', own.cliKey)).status).toBe(401);
    expect((await call('GET', '/api/cli/whoami', own.cliKey)).status).toBe(401);
    // A second logout with the same key: it is already gone.
    expect((await call('POST', '/api/cli/logout', own.cliKey)).status).toBe(401);
    // The tenant's other keys are untouched.
    expect((await call('GET', '/api/cli/balance', own.appKey)).status).toBe(200);
  });

  it('refuses to revoke an App Key or a Connection Key', async () => {
    for (const key of [tenant.appKey, tenant.connectionKey]) {
      const response = await call('POST', '/api/cli/logout', key);
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({
        message: 'Only CLI keys can be revoked with logout',
        code: 'NOT_A_CLI_KEY',
      });
      expect((await call('GET', '/api/cli/balance', key)).status).toBe(200);
    }
  });

  it('answers 401 without a key', async () => {
    const response = await call('POST', '/api/cli/logout');
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ message: 'Missing Bearer token' });
  });
});

describe('rate limits', () => {
  it('answers the 31st whoami in a minute from one IP with 429 and Retry-After', async () => {
    const other = await openTestStore();
    const fresh = await startPlatform(other);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 31; i++) {
        statuses.push((await fetch(`${fresh.url}/api/cli/whoami`)).status);
      }
      expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
      const limited = await fetch(`${fresh.url}/api/cli/whoami`);
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await limited.json()).toEqual({ message: 'Rate limit exceeded' });
    } finally {
      await fresh.close();
      await other.dispose();
    }
  });
});
