/**
 * The SDK against a running platform over loopback HTTP: balance, connections, forUser with a real
 * identity JWT from the development IdP, and the typed errors of real answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream } from '../../core/test/support/fake-upstream.js';
import { createMeteredTenant, seedProviders } from '../../core/test/support/metered.js';
import { createClient, ServiceAuthError, type ServiceClient, ServiceRateLimitError } from '../src/index.js';
import {
  createTenantFixture,
  openTestStore,
  type RunningPlatform,
  startPlatform,
  type TenantFixture,
  type TestStore,
} from './support/platform.js';

let store: TestStore;
let running: RunningPlatform;
let tenant: TenantFixture;
let client: ServiceClient;

beforeAll(async () => {
  store = await openTestStore();
  running = await startPlatform(store);
  tenant = await createTenantFixture(running.platform, 25_000_000);
  client = createClient({ apiKey: tenant.appKey, baseUrl: running.url });
});
afterAll(async () => {
  await running?.close();
  await store?.dispose();
});

async function identityJwt(email: string): Promise<string> {
  const response = await fetch(`${running.url}/auth/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  return ((await response.json()) as { access_token: string }).access_token;
}

describe('balance()', () => {
  it("reads the tenant's credit in micros with an App Key", async () => {
    expect(await client.balance()).toEqual({
      credits_remaining_micros: 25_000_000,
      currency: 'USD',
      top_up_url: `${running.platform.context.baseUrl}/billing`,
    });
  });

  it('works with a Connection Key too', async () => {
    const balance = await createClient({ apiKey: tenant.connectionKey, baseUrl: running.url }).balance();
    expect(balance.credits_remaining_micros).toBe(25_000_000);
  });
});

describe('forUser(jwt)', () => {
  it("sends a development-IdP identity JWT and reads that user's own tenant", async () => {
    const jwt = await identityJwt('sdk-user@example.test');
    const user = client.forUser(jwt);
    // A first sign-in creates the user's workspace with an empty wallet.
    expect(await user.balance()).toMatchObject({ credits_remaining_micros: 0, currency: 'USD' });
    // The parent still acts as the app.
    expect((await client.balance()).credits_remaining_micros).toBe(25_000_000);
  });

  it('ends in a ServiceAuthError when the JWT is not valid', async () => {
    const jwt = await identityJwt('tampered@example.test');
    const tampered = `${jwt.slice(0, -4)}AAAA`;
    await expect(client.forUser(tampered).balance()).rejects.toBeInstanceOf(ServiceAuthError);
  });
});

describe('typed errors from real answers', () => {
  it('answers an unknown key with a ServiceAuthError carrying the status, code and message', async () => {
    const error = await createClient({ apiKey: `service_sk_${'x'.repeat(43)}`, baseUrl: running.url })
      .balance()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceAuthError);
    expect(error).toMatchObject({
      status: 401,
      code: 'unauthorized',
      message: 'Invalid or revoked token',
      requestId: expect.any(String),
    });
  });

  it('answers a rate-limited caller with a ServiceRateLimitError carrying retryAfter', async () => {
    const other = await openTestStore();
    const limited = await startPlatform(other, {
      rateLimits: { billingBalance: { limit: 2, windowMs: 60_000 } },
    });
    try {
      const own = await createTenantFixture(limited.platform, 1);
      // No retries: a 429 whose Retry-After fits under retry.maxDelayMs (the window about to
      // reset) would be waited out and retried, and the third read would then succeed.
      const sdk = createClient({ apiKey: own.appKey, baseUrl: limited.url, retry: false });
      await sdk.balance();
      await sdk.balance();
      const error = await sdk.balance().catch((e) => e);
      expect(error).toBeInstanceOf(ServiceRateLimitError);
      expect(error).toMatchObject({ status: 429, code: 'rate_limited', message: 'Rate limit exceeded' });
      expect(error.retryAfter).toBeGreaterThan(0);
      expect(error.retryAfter).toBeLessThanOrEqual(60);
    } finally {
      await limited.close();
      await other.dispose();
    }
  });
});

describe('connections', () => {
  it("lists the app's connections and gets one by slug", async () => {
    const upstream = await startFakeUpstream();
    try {
      await seedProviders(running.platform, upstream.url);
      const metered = await createMeteredTenant(running.platform, 1_000_000);
      const app = createClient({ apiKey: metered.appKey, baseUrl: running.url });
      const list = await app.connections.list();
      expect(list.map((c) => c.slug).sort()).toEqual(['llm', 'search']);
      const one = await app.connections.get('search');
      expect(one).toMatchObject({ id: metered.searchConnectionId, slug: 'search', status: 'connected' });
      expect(await app.connections.get('no-such-provider')).toBeNull();
    } finally {
      await upstream.close();
    }
  });

  it('refuses a Connection Key and an identity JWT with a ServiceAuthError', async () => {
    const byConnectionKey = createClient({ apiKey: tenant.connectionKey, baseUrl: running.url });
    await expect(byConnectionKey.connections.list()).rejects.toBeInstanceOf(ServiceAuthError);
    const byUser = client.forUser(await identityJwt('conn-user@example.test'));
    const error = await byUser.connections.list().catch((e) => e);
    expect(error).toBeInstanceOf(ServiceAuthError);
    expect(error.message).toMatch(
      /^Missing or invalid Bearer token: \/api\/deployments\/me\/connections takes an App Key\./,
    );
    expect(error.suggestedFix).toContain('SERVICE_API_KEY');
  });

  it("explains on the events stream's 401 that a CLI key is not the App Key it needs", async () => {
    // What `service login` saves: a valid key of the tenant, of the wrong kind for this route.
    const byCliKey = createClient({ apiKey: tenant.cliKey, baseUrl: running.url });
    const error = await byCliKey.events
      .subscribe()
      .next()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceAuthError);
    expect(error.status).toBe(401);
    expect(error.message).toContain('/api/deployments/me/events takes an App Key');
    expect(error.message).toContain('the CLI key `service login` saves');
  });

  it('does not blame the kind of key when an App Key is revoked: the 401 names both causes', async () => {
    const revoked = await createTenantFixture(running.platform);
    await running.platform.context.keys.revoke(revoked.appKeyId);
    const error = await createClient({ apiKey: revoked.appKey, baseUrl: running.url })
      .connections.list()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceAuthError);
    expect(error.status).toBe(401);
    expect(error.message).toContain('/api/deployments/me/connections takes an App Key');
    expect(error.suggestedFix).toContain('The key sent is unknown or revoked, or is not an App Key');
  });
});
