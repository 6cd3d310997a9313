/**
 * The example tool against a running platform: it starts from the balance and connections, and
 * follows the event stream.
 */

import { createClient } from '@service/sdk';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createConnection } from '../../../packages/core/src/connections/service.js';
import { appendEvents } from '../../../packages/core/src/events/log.js';
import { upsertProvider } from '../../../packages/core/src/proxy/providers.js';
import { type FakeUpstream, startFakeUpstream } from '../../../packages/core/test/support/fake-upstream.js';
import {
  createMeteredTenant,
  type MeteredTenant,
  POOL_CREDENTIAL,
  seedProviders,
} from '../../../packages/core/test/support/metered.js';
import { type RunningPlatform, startPlatform } from '../../../packages/core/test/support/platform.js';
import { openTestStore, type TestStore } from '../../../packages/core/test/support/stores.js';
import { type DeployedTool, SEARCH_PROVIDER, startDeployedTool } from '../src/tool.js';

let store: TestStore;
let upstream: FakeUpstream;
let running: RunningPlatform;
let tenant: MeteredTenant;
let tool: DeployedTool;

beforeAll(async () => {
  store = await openTestStore();
  upstream = await startFakeUpstream();
  running = await startPlatform(store);
  await seedProviders(running.platform, upstream.url);
  tenant = await createMeteredTenant(running.platform, 3_000_000);
  await connectWebSearch(running, tenant, upstream.url);
  tool = await startDeployedTool(createClient({ apiKey: tenant.appKey, baseUrl: running.url }));
});
afterAll(async () => {
  await tool?.close();
  await running?.close();
  await upstream?.close();
  await store?.dispose();
});

/**
 * The demo's search provider as `pnpm start` seeds it, over the fake upstream, bound to the app.
 * It sends its key in a header of its own, so the upstream tells its calls from the fixture
 * provider `search`'s.
 */
async function connectWebSearch(running: RunningPlatform, tenant: MeteredTenant, upstreamUrl: string) {
  const { db } = running.platform.store;
  const { sealer, keys } = running.platform.context;
  await db
    .insertInto('integrations')
    .values({
      provider: SEARCH_PROVIDER,
      name: 'Web search',
      category: 'search',
      supported_profiles: JSON.stringify(['vendo_managed_pool', 'byok_static']),
    })
    .execute();
  await upsertProvider(db, sealer, {
    slug: SEARCH_PROVIDER,
    upstreamUrl,
    dialect: 'per_call',
    authHeader: 'x-web-search-key',
    authScheme: '',
    credential: POOL_CREDENTIAL,
    rates: [{ meter: 'call', unitPriceMicros: '1000' }],
  });
  await createConnection(
    { db, sealer, keys },
    { tenantId: tenant.tenantId, provider: SEARCH_PROVIDER, appId: tenant.appId },
  );
}

const view = async () => (await fetch(`${tool.url}/`)).json();

it('starts from its balance and connections', async () => {
  expect(await view()).toEqual({
    balance_micros: 3_000_000,
    connections: [
      { slug: 'llm', status: 'connected' },
      { slug: 'search', status: 'connected' },
      { slug: SEARCH_PROVIDER, status: 'connected' },
    ].sort((a, b) => a.slug.localeCompare(b.slug)),
    last_event: null,
  });
  expect((await fetch(`${tool.url}/healthz`)).status).toBe(200);
});

const emit = (
  kind: 'connection.status_changed' | 'billing.balance_changed',
  fields: Record<string, unknown>,
) => store.db.transaction().execute((trx) => appendEvents(trx, [{ appId: tenant.appId, kind, fields }]));

/** Resolves once `tool` follows the stream: a fresh subscriber only sees events after it connects. */
async function following(tool: DeployedTool) {
  await expect
    .poll(
      async () => {
        await emit('billing.balance_changed', { remaining_micros: 3_000_000 });
        return ((await (await fetch(`${tool.url}/`)).json()) as { last_event: unknown }).last_event;
      },
      { timeout: 10_000, interval: 200 },
    )
    .not.toBeNull();
}

it('re-reads its connections on a connection event, and survives a failed re-read', async () => {
  // The first re-read fails at the network; the stream goes on and the next event is honoured.
  let failNextList = false;
  const flaky = startDeployedTool(
    createClient({
      apiKey: tenant.appKey,
      baseUrl: running.url,
      retry: false,
      fetch: (input, init) => {
        if (failNextList && String(input).endsWith('/api/deployments/me/connections')) {
          failNextList = false;
          return Promise.reject(new TypeError('fetch failed'));
        }
        return globalThis.fetch(input, init);
      },
    }),
  );
  const other = await flaky;
  const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
  try {
    const statusOf = async () =>
      (
        (await (await fetch(`${other.url}/`)).json()) as {
          connections: Array<{ slug: string; status: string }>;
        }
      ).connections.find((c) => c.slug === 'search')?.status;
    await following(other);
    failNextList = true;
    await store.db
      .updateTable('connections')
      .set({ status: 'needs_reauth' })
      .where('id', '=', tenant.searchConnectionId)
      .execute();
    await emit('connection.status_changed', {
      slug: 'search',
      connection_id: tenant.searchConnectionId,
      status: 'needs_reauth',
    });
    await expect.poll(() => errors.mock.calls.length, { timeout: 10_000 }).toBe(1);
    expect(await statusOf()).toBe('connected');
    await emit('connection.status_changed', {
      slug: 'search',
      connection_id: tenant.searchConnectionId,
      status: 'needs_reauth',
    });
    await expect.poll(statusOf, { timeout: 10_000 }).toBe('needs_reauth');
  } finally {
    errors.mockRestore();
    await other.close();
    await store.db
      .updateTable('connections')
      .set({ status: 'connected' })
      .where('id', '=', tenant.searchConnectionId)
      .execute();
  }
});

it('searches through the platform’s proxy, on the provider the demo seeds', async () => {
  const answer = await fetch(`${tool.url}/search?q=balance`);
  expect(answer.status).toBe(200);
  expect(await answer.json()).toEqual({ results: [{ title: 'A result', url: 'https://example.com' }] });
  const call = upstream.requests.at(-1)!;
  expect(call.path).toBe('/search');
  expect(call.headers['x-web-search-key']).toBe(POOL_CREDENTIAL);
});

it('follows the event stream', async () => {
  // The search above settles in the background, and its own balance event would land after this
  // test's: it is in first, and seen.
  await running.platform.context.metering.settled();
  await expect.poll(async () => (await view()).balance_micros, { timeout: 10_000 }).toBe(3_000_000 - 1_200);
  await store.db
    .transaction()
    .execute((trx) =>
      appendEvents(trx, [
        { appId: tenant.appId, kind: 'billing.balance_changed', fields: { remaining_micros: 1_234 } },
      ]),
    );
  await expect.poll(async () => (await view()).balance_micros, { timeout: 10_000 }).toBe(1_234);
  expect((await view()).last_event).toMatchObject({ kind: 'billing.balance_changed' });
});
