/**
 * The whole deploy journey over real HTTP: a new user signs in (development IdP), buys credit
 * (development processor: its confirmation form), connects an integration, deploys the example
 * tool from the catalog, opens it through the app proxy, where the tool shows the balance and
 * connections it read with its App Key and makes a metered call, and the call shows in the
 * deployment's usage.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { upsertProvider } from '../src/proxy/providers.js';
import { DEPLOYED_TOOL_ARTIFACT, ensureSdkBuilt, publishTestRelease } from './support/deploy.js';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { POOL_CREDENTIAL, seedProviders } from './support/metered.js';
import { devSignIn, type RunningPlatform, startPlatformAtOwnUrl } from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

/** The provider the example tool searches through (the demo's `web-search`). */
const SEARCH_PROVIDER = 'web-search';

let store: TestStore;
let server: RunningPlatform;
let upstream: FakeUpstream;

beforeAll(async () => {
  ensureSdkBuilt();
  store = await openTestStore();
  upstream = await startFakeUpstream();
  server = await startPlatformAtOwnUrl(store);
  await seedProviders(server.platform, upstream.url);
  // The same per-call search as `search`, under the name the tool calls.
  const { db } = server.platform.store;
  await db
    .insertInto('integrations')
    .values({ provider: SEARCH_PROVIDER, name: 'Web search', category: 'search' })
    .execute();
  await upsertProvider(db, server.platform.context.sealer, {
    slug: SEARCH_PROVIDER,
    upstreamUrl: upstream.url,
    dialect: 'per_call',
    authHeader: 'x-api-key',
    authScheme: '',
    credential: POOL_CREDENTIAL,
    rates: [{ meter: 'call', unitPriceMicros: '1000' }],
  });
  await publishTestRelease(server.platform, {
    slug: 'example-tool',
    required: [SEARCH_PROVIDER],
    artifact: DEPLOYED_TOOL_ARTIFACT,
  });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await upstream?.close();
  await store?.dispose();
});

it('signs in, buys credit, deploys the example tool, uses it through the app proxy, and sees its usage', async () => {
  const cookie = await devSignIn(server, 'journey@example.test');
  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method,
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  // Before any credit, deploying is refused by the billing gate.
  const early = await api('POST', '/api/deploy', { toolSlug: 'example-tool', slug: 'journey' });
  expect(early.status).toBe(402);
  expect((await early.json()).code).toBe('BILLING_NOT_SETUP');

  // Buy USD 5 through the development processor, confirming on its page the way its form does.
  const purchase = await api('POST', '/api/billing/purchase', { pack: 5 });
  const confirmPath = new URL(((await purchase.json()) as { url: string }).url).pathname;
  const page = await (await api('GET', confirmPath)).text();
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)![1]!;
  const confirmed = await fetch(`${server.url}${confirmPath}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf_token: csrf }).toString(),
  });
  expect(confirmed.status).toBe(303);

  expect((await api('POST', '/api/connections', { provider: SEARCH_PROVIDER })).status).toBe(201);
  const deployed = await api('POST', '/api/deploy', { toolSlug: 'example-tool', slug: 'journey' });
  expect(deployed.status, await deployed.clone().text()).toBe(201);
  const { app, appKey } = (await deployed.json()) as {
    app: { id: string; openUrl: string; usageUrl: string };
    appKey: { key: string };
  };

  // The tool read its balance and connections with its App Key at start.
  const opened = await api('GET', new URL(app.openUrl).pathname);
  expect(opened.status).toBe(200);
  expect(await opened.json()).toMatchObject({
    balance_micros: 5_000_000,
    connections: [{ slug: SEARCH_PROVIDER, status: 'connected' }],
  });

  // A metered call the tool makes through the platform's proxy, with its App Key.
  const searched = await api('GET', '/apps/journey/search?q=deploy');
  expect(searched.status).toBe(200);
  expect((await searched.json()).results).toHaveLength(1);
  expect(upstream.requests.at(-1)!.headers['x-api-key']).toBe(POOL_CREDENTIAL);

  let usage: { summary: { totalCost: number }; providers?: unknown } = { summary: { totalCost: 0 } };
  for (let i = 0; i < 50 && usage.summary.totalCost === 0; i++) {
    const answer = await api('GET', `${new URL(app.usageUrl).pathname}?range=1h`);
    expect(answer.status).toBe(200);
    usage = await answer.json();
    if (usage.summary.totalCost === 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // One search: 1000 micros at the default 20 % margin, taken from the credit bought.
  expect(usage.summary.totalCost).toBe(1200);
  expect(usage).toMatchObject({ providers: [{ provider: SEARCH_PROVIDER, events: 1, cost: '1200' }] });
  // The balance read is advisory and cached for a second.
  let remaining = 5_000_000;
  for (let i = 0; i < 40 && remaining === 5_000_000; i++) {
    const balance = await fetch(`${server.url}/api/billing/balance`, {
      headers: { authorization: `Bearer ${appKey.key}` },
    });
    remaining = (await balance.json()).credits_remaining_micros;
    if (remaining === 5_000_000) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(remaining).toBe(5_000_000 - 1200);
}, 60_000);
