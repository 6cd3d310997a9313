import { createConnection } from '../../src/connections/service.js';
import type { Platform, PlatformOptions } from '../../src/platform/create-platform.js';
import { type ProviderInput, upsertProvider } from '../../src/proxy/providers.js';
import { type FakeUpstream, startFakeUpstream } from './fake-upstream.js';
import { createTenantFixture, type RunningPlatform, startPlatform, type TenantFixture } from './platform.js';
import { openTestStore, type StoreKind, type TestStore } from './stores.js';

/** The managed-pool credential the fake upstream should receive. */
export const POOL_CREDENTIAL = 'sk-pool-secret';

/** The `llm` provider as `seedProviders` stores it, for a test that changes one of its fields. */
export const llmProvider = (upstreamUrl: string): ProviderInput => ({
  slug: 'llm',
  upstreamUrl,
  dialect: 'openai',
  credential: POOL_CREDENTIAL,
  freeRoutes: ['GET /v1/models'],
  holdMicros: 5000,
  rates: [
    { meter: 'input_tokens', unitPriceMicros: '0.5' },
    { meter: 'output_tokens', unitPriceMicros: '1.5' },
  ],
});

/**
 * Two providers over the fake upstream: `llm` (OpenAI dialect, 0.5 and 1.5 micros per input and
 * output token, model listing free) and `search` (1000 micros a call). With the default 20 %
 * margin a completion of 10 + 20 tokens costs 42 micros and a search 1200.
 */
export async function seedProviders(platform: Platform, upstreamUrl: string): Promise<void> {
  const { sealer } = platform.context;
  const { db } = platform.store;
  for (const [provider, name] of [
    ['llm', 'LLM'],
    ['search', 'Search'],
  ] as const) {
    await db
      .insertInto('integrations')
      .values({
        provider,
        name,
        category: provider === 'llm' ? 'ai' : 'search',
        supported_profiles: JSON.stringify(['vendo_managed_pool', 'byok_static']),
        env_bootstrap: JSON.stringify({
          vars: [
            { name: `${provider.toUpperCase()}_API_KEY`, value_from: 'app_key' },
            { name: `${provider.toUpperCase()}_BASE_URL`, value_from: 'proxy_url' },
          ],
          restart: 'on_change',
        }),
      })
      .onConflict((oc) => oc.column('provider').doNothing())
      .execute();
  }
  await upsertProvider(db, sealer, llmProvider(upstreamUrl));
  await upsertProvider(db, sealer, {
    slug: 'search',
    upstreamUrl,
    dialect: 'per_call',
    authHeader: 'x-api-key',
    authScheme: '',
    credential: POOL_CREDENTIAL,
    rates: [{ meter: 'call', unitPriceMicros: '1000' }],
  });
}

export interface MeteredTenant extends TenantFixture {
  llmConnectionId: string;
  searchConnectionId: string;
}

/** A tenant whose app is bound to managed-pool connections of both providers. */
export async function createMeteredTenant(platform: Platform, creditMicros: number): Promise<MeteredTenant> {
  const tenant = await createTenantFixture(platform, creditMicros);
  const deps = { db: platform.store.db, sealer: platform.context.sealer, keys: platform.context.keys };
  const llm = await createConnection(deps, {
    tenantId: tenant.tenantId,
    provider: 'llm',
    appId: tenant.appId,
  });
  const search = await createConnection(deps, {
    tenantId: tenant.tenantId,
    provider: 'search',
    appId: tenant.appId,
  });
  return { ...tenant, llmConnectionId: llm.id, searchConnectionId: search.id };
}

export interface MeteredWorld {
  store: TestStore;
  upstream: FakeUpstream;
  server: RunningPlatform;
  close(): Promise<void>;
}

/**
 * A fresh store, the fake upstream and a platform on loopback with both providers seeded, served
 * through its `fetch` or its Node listener.
 */
export async function startMeteredWorld(
  kind: StoreKind = 'pglite',
  serving: 'fetch' | 'node' = 'fetch',
  options: Omit<PlatformOptions, 'store'> = {},
): Promise<MeteredWorld> {
  const store = await openTestStore(kind);
  const upstream = await startFakeUpstream();
  const server = await startPlatform(store, options, serving);
  await seedProviders(server.platform, upstream.url);
  return {
    store,
    upstream,
    server,
    close: async () => {
      await server.close();
      await upstream.close();
      await store.dispose();
    },
  };
}
