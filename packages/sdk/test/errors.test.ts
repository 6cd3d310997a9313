/**
 * Every error family of the SDK from real answers of a running platform: its metering proxy (in
 * front of a fake provider on loopback, the one edge we cannot reach) and its balance endpoint.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection } from '../../core/src/connections/service.js';
import { upsertProvider } from '../../core/src/proxy/providers.js';
import { type FakeUpstream, startFakeUpstream } from '../../core/test/support/fake-upstream.js';
import { createMeteredTenant, seedProviders } from '../../core/test/support/metered.js';
import {
  createClient,
  ServiceAuthError,
  ServiceBalanceExhaustedError,
  ServiceNotConnectedError,
  ServiceRateLimitError,
  ServiceSpendCapError,
  ServiceUpstreamError,
  ServiceValidationError,
} from '../src/index.js';
import {
  createTenantFixture,
  openTestStore,
  type RunningPlatform,
  startPlatform,
  type TestStore,
} from './support/platform.js';

let store: TestStore;
let upstream: FakeUpstream;
let running: RunningPlatform;

beforeAll(async () => {
  store = await openTestStore();
  upstream = await startFakeUpstream();
  running = await startPlatform(store, { rateLimits: { billingBalance: { limit: 1, windowMs: 60_000 } } });
  await seedProviders(running.platform, upstream.url);
});
afterAll(async () => {
  await running?.close();
  await upstream?.close();
  await store?.dispose();
});

const sdk = (apiKey: string) => createClient({ apiKey, baseUrl: running.url, retry: false });
const search = (apiKey: string) => sdk(apiKey).proxy.fetch('search', '/search?q=weather');

async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('typed errors from the metering proxy', () => {
  it('returns a metered answer as the provider sent it', async () => {
    const tenant = await createMeteredTenant(running.platform, 1_000_000);
    const response = await search(tenant.appKey);
    expect(response.status).toBe(200);
    expect(await response.json()).toBeTruthy();
  });

  it('auth: an unknown key is a ServiceAuthError', async () => {
    const error = await search(`service_sk_${'u'.repeat(43)}`).catch((e) => e);
    expect(error).toBeInstanceOf(ServiceAuthError);
    expect(error).toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('not connected: carries the slug, connect_url and suggested_fix', async () => {
    const unbound = await createTenantFixture(running.platform, 1_000_000);
    const error = await search(unbound.appKey).catch((e) => e);
    expect(error).toBeInstanceOf(ServiceNotConnectedError);
    expect(error).toMatchObject({
      status: 403,
      code: 'not_connected',
      slug: 'search',
      connectUrl: expect.stringMatching(/\/integrations\/search$/),
      suggestedFix: expect.any(String),
    });
  });

  it('balance exhausted: a call at zero credit', async () => {
    const broke = await createMeteredTenant(running.platform, 0);
    const error = await search(broke.appKey).catch((e) => e);
    expect(error).toBeInstanceOf(ServiceBalanceExhaustedError);
    expect(error).toMatchObject({ status: 402, code: 'balance_exhausted', slug: 'search' });
  });

  it('spend cap: names the window, when it resets and how long to wait', async () => {
    const tenant = await createMeteredTenant(running.platform, 1_000_000);
    await store.db
      .insertInto('spend_caps')
      .values({ app_id: tenant.appId, tenant_id: tenant.tenantId, daily_micros: 1000, monthly_micros: null })
      .execute();
    // The first call (1200 micros) uses the cap up; the next is refused.
    await (await search(tenant.appKey)).arrayBuffer();
    const error = await search(tenant.appKey).catch((e) => e);
    expect(error).toBeInstanceOf(ServiceSpendCapError);
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    expect(error).toMatchObject({
      status: 402,
      code: 'spend_cap_exceeded',
      window: 'daily',
      resetsAt: midnight.toISOString(),
    });
    expect(error.retryAfter).toBeGreaterThan(0);
  });

  it('validation: a model the platform has no price for', async () => {
    const tenant = await createMeteredTenant(running.platform, 1_000_000);
    const { sealer, keys } = running.platform.context;
    const { db } = running.platform.store;
    await db.insertInto('integrations').values({ provider: 'picky', name: 'Picky' }).execute();
    await upsertProvider(db, sealer, {
      slug: 'picky',
      upstreamUrl: upstream.url,
      dialect: 'openai',
      rates: [{ meter: 'output_tokens', model: 'priced-model', unitPriceMicros: '1' }],
    });
    await createConnection(
      { db, sealer, keys },
      { tenantId: tenant.tenantId, provider: 'picky', appId: tenant.appId },
    );
    const error = await sdk(tenant.appKey)
      .proxy.fetch('picky', '/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'other-model' }),
      })
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceValidationError);
    expect(error).toMatchObject({
      status: 400,
      code: 'validation_failed',
      message: 'No price for model other-model on picky',
    });
  });

  it('upstream: a provider that cannot be reached', async () => {
    const tenant = await createMeteredTenant(running.platform, 1_000_000);
    const { sealer, keys } = running.platform.context;
    const { db } = running.platform.store;
    await db.insertInto('integrations').values({ provider: 'gone', name: 'Gone' }).execute();
    await upsertProvider(db, sealer, {
      slug: 'gone',
      upstreamUrl: `http://127.0.0.1:${await deadPort()}`,
      dialect: 'per_call',
      rates: [{ meter: 'call', unitPriceMicros: '1' }],
    });
    await createConnection(
      { db, sealer, keys },
      { tenantId: tenant.tenantId, provider: 'gone', appId: tenant.appId },
    );
    const error = await sdk(tenant.appKey)
      .proxy.fetch('gone', '/anything')
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceUpstreamError);
    expect(error).toMatchObject({ status: 502, code: 'upstream_error', slug: 'gone' });
  });

  it("returns the provider's own error answers untouched", async () => {
    const tenant = await createMeteredTenant(running.platform, 1_000_000);
    upstream.failWith = 503;
    try {
      const response = await search(tenant.appKey);
      expect(response.status).toBe(503);
      expect(response.headers.get('service-error-code')).toBeNull();
    } finally {
      upstream.failWith = null;
    }
  });
});

describe('typed errors from the balance endpoint', () => {
  it('rate limited: the second read in a minute under a limit of one', async () => {
    const tenant = await createTenantFixture(running.platform, 1);
    await sdk(tenant.appKey).balance();
    const error = await sdk(tenant.appKey)
      .balance()
      .catch((e) => e);
    expect(error).toBeInstanceOf(ServiceRateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(error.retryAfter).toBeGreaterThan(0);
  });
});
