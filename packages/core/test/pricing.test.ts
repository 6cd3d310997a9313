/**
 * `/api/pricing/*` over real HTTP: the LLM gateway's live model catalog with the margin applied
 * in exact decimals (kept an hour on the platform clock, `cached` when served from memory, 502
 * naming the gateway on any upstream failure), the public allowlist and its rate tables with
 * their CDN headers, the faults' exact messages, and no tenant data on any answer.
 *
 * The gateway is a local HTTP server speaking the OpenAI-compatible `/models` listing with prices.
 *
 * @see docs/api/pricing.md
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertProvider } from '../src/proxy/providers.js';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, llmProvider, seedProviders } from './support/metered.js';
import { devSignIn, type RunningPlatform, signedInTeammate, startPlatform } from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

const HOUR = 60 * 60_000;

/** What the gateway answers with. */
type Mode = 'ok' | 'error' | 'malformed' | 'wrong-shape' | 'slow' | 'huge' | 'held';

interface FakeGateway {
  url: string;
  mode: Mode;
  /** Listing requests received. */
  hits: number;
  /** In mode `held`, answers the listings held so far (each as `ok`). */
  release(): void;
  close(): Promise<void>;
}

const LISTING = {
  data: [
    {
      id: 'vendor/small',
      name: 'Vendor: Small',
      context_length: 128000,
      pricing: { prompt: '0.00000015', completion: '0.0000006' },
    },
    // No name: its id names it; a price with more decimals than floats keep.
    { id: 'vendor/tiny', context_length: 8192, pricing: { prompt: '0.0000000375', completion: '0.0000001' } },
    // Unusable entries are left out: a "varies" price, no pricing, no id.
    {
      id: 'vendor/router',
      name: 'Router',
      context_length: 1000,
      pricing: { prompt: '-1', completion: '-1' },
    },
    { id: 'vendor/free-text', name: 'No price' },
    { name: 'No id', pricing: { prompt: '0', completion: '0' } },
  ],
};

async function startGateway(): Promise<FakeGateway> {
  let server!: Server;
  const held: Array<() => void> = [];
  const gateway: FakeGateway = {
    url: '',
    mode: 'ok',
    hits: 0,
    release: () => {
      for (const answer of held.splice(0)) answer();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server = createServer((req, res) => {
    if (req.url !== '/v1/models') {
      res.writeHead(404).end();
      return;
    }
    gateway.hits++;
    const json = (body: string, status = 200) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    switch (gateway.mode) {
      case 'ok':
        return json(JSON.stringify(LISTING));
      case 'error':
        return json('{"error":{"message":"overloaded"}}', 503);
      case 'malformed':
        return json('{"data": [');
      case 'wrong-shape':
        return json('{"models": []}');
      case 'slow':
        setTimeout(() => json(JSON.stringify(LISTING)), 2000);
        return;
      case 'huge':
        return json(JSON.stringify({ data: [], padding: 'x'.repeat(64 * 1024) }));
      case 'held':
        held.push(() => json(JSON.stringify(LISTING)));
        return;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  gateway.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return gateway;
}

let store: TestStore;
let gateway: FakeGateway;
let upstream: FakeUpstream;
let server: RunningPlatform;
let clock = Date.now();

beforeAll(async () => {
  store = await openTestStore();
  gateway = await startGateway();
  upstream = await startFakeUpstream();
  server = await startPlatform(store, {
    now: () => clock,
    adminEmails: ['ops@example.test'],
    pricing: { timeoutMs: 300, maxBytes: 32 * 1024 },
  });
  // `llm` is the LLM gateway: its upstream serves the listing; `search` has public per-call prices.
  await seedProviders(server.platform, gateway.url);
  await store.db
    .updateTable('integrations')
    .set({ kind: 'llm_gateway' })
    .where('provider', '=', 'llm')
    .execute();
  await store.db.updateTable('meter_rates').set({ public: true }).where('provider', '=', 'search').execute();
  await store.db
    .updateTable('providers')
    .set({ upstream_url: upstream.url })
    .where('slug', '=', 'search')
    .execute();
});
afterAll(async () => {
  await server?.close();
  await gateway?.close();
  await upstream?.close();
  await store?.dispose();
});

const get = (path: string, cookie?: string, on = server) =>
  fetch(`${on.url}${path}`, cookie ? { headers: { cookie } } : {});
const expectError = async (response: Response, status: number, message: string) => {
  expect(response.status, await response.clone().text()).toBe(status);
  expect(await response.json()).toEqual({ message });
  expect(response.headers.get('cache-control')).toBe('no-store');
};

describe('GET /api/pricing/models', () => {
  it('lists the gateway models with the margin applied, exactly', async () => {
    const response = await get('/api/pricing/models');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(await response.json()).toEqual({
      models: [
        {
          id: 'vendor/small',
          name: 'Vendor: Small',
          context_length: 128000,
          pricing: {
            prompt_per_token: 0.00000018,
            completion_per_token: 0.00000072,
            prompt_per_million: 0.18,
            completion_per_million: 0.72,
          },
        },
        {
          id: 'vendor/tiny',
          name: 'vendor/tiny',
          context_length: 8192,
          pricing: {
            prompt_per_token: 0.000000045,
            completion_per_token: 0.00000012,
            prompt_per_million: 0.045,
            completion_per_million: 0.12,
          },
        },
      ],
      cached: false,
    });
  });

  it('serves the listing from memory for an hour of the platform clock', async () => {
    const hits = gateway.hits;
    const cached = (await (await get('/api/pricing/models')).json()) as { cached: boolean };
    expect(cached.cached).toBe(true);
    clock += HOUR - 1;
    expect(((await (await get('/api/pricing/models')).json()) as { cached: boolean }).cached).toBe(true);
    expect(gateway.hits).toBe(hits);
    clock += 1;
    expect(((await (await get('/api/pricing/models')).json()) as { cached: boolean }).cached).toBe(false);
    expect(gateway.hits).toBe(hits + 1);
  });

  it("applies the gateway provider's own margin, picked up as soon as the provider is saved", async () => {
    const promptPerMillion = async () => {
      const body = (await (await get('/api/pricing/models')).json()) as {
        models: Array<{ pricing: { prompt_per_million: number } }>;
      };
      return body.models[0]?.pricing.prompt_per_million;
    };
    // Cached (the platform clock stands still): only the write's own change notice drops it.
    expect(await promptPerMillion()).toBe(0.18);
    const { sealer } = server.platform.context;
    await upsertProvider(store.db, sealer, { ...llmProvider(gateway.url), marginPercent: '50' });
    await expect.poll(promptPerMillion).toBe(0.225);
    await upsertProvider(store.db, sealer, llmProvider(gateway.url));
    await expect.poll(promptPerMillion).toBe(0.18);
  });

  it('never keeps a listing priced before a margin change that arrived while it was fetched', async () => {
    // An instance of its own, with the default fetch timeout: the listing is held meanwhile.
    const other = await startPlatform(store, { now: () => clock });
    const promptPerMillion = async () => {
      const body = (await (await get('/api/pricing/models', undefined, other)).json()) as {
        models: Array<{ pricing: { prompt_per_million: number } }>;
      };
      return body.models[0]?.pricing.prompt_per_million;
    };
    const { sealer } = server.platform.context;
    try {
      gateway.mode = 'held';
      const hits = gateway.hits;
      // A fetch under way, priced at the margin read before it (20 %)...
      const before = promptPerMillion();
      await expect.poll(() => gateway.hits).toBe(hits + 1);
      // ...when the margin changes, and the change notice drops the cache.
      await upsertProvider(store.db, sealer, { ...llmProvider(gateway.url), marginPercent: '50' });
      await new Promise((resolve) => setTimeout(resolve, 200));
      // A caller arriving now does not share the fetch priced before the change.
      const after = promptPerMillion();
      await expect.poll(() => gateway.hits).toBe(hits + 2);
      gateway.mode = 'ok';
      gateway.release();
      expect(await before).toBe(0.18);
      expect(await after).toBe(0.225);
      // What is kept is the listing priced after the change.
      expect(await promptPerMillion()).toBe(0.225);
      expect(gateway.hits).toBe(hits + 2);
    } finally {
      gateway.mode = 'ok';
      gateway.release();
      await upsertProvider(store.db, sealer, llmProvider(gateway.url));
      await other.close();
    }
  });

  it('answers 502 naming the gateway on every upstream failure, and caches none', async () => {
    const host = new URL(gateway.url).host;
    for (const mode of ['error', 'malformed', 'wrong-shape', 'slow', 'huge'] as const) {
      gateway.mode = mode;
      clock += HOUR;
      await expectError(await get('/api/pricing/models'), 502, `Failed to fetch models from ${host}`);
    }
    gateway.mode = 'ok';
    const after = (await (await get('/api/pricing/models')).json()) as { cached: boolean; models: unknown[] };
    expect(after).toMatchObject({ cached: false });
    expect(after.models).toHaveLength(2);
  });

  it('names an unreachable configured gateway by its configured name, or its host', async () => {
    const closed = await startGateway();
    await closed.close();
    for (const [options, name] of [
      [{ modelsUrl: `${closed.url}/v1/models` }, new URL(closed.url).host],
      [{ modelsUrl: `${closed.url}/v1/models`, gatewayName: 'Acme Gateway' }, 'Acme Gateway'],
    ] as const) {
      const other = await startPlatform(store, { pricing: options });
      try {
        await expectError(
          await get('/api/pricing/models', undefined, other),
          502,
          `Failed to fetch models from ${name}`,
        );
      } finally {
        await other.close();
      }
    }
    // SERVICE_MODELS_URL configures it too.
    const fromEnv = await startPlatform(store, { env: { SERVICE_MODELS_URL: `${gateway.url}/v1/models` } });
    try {
      expect((await get('/api/pricing/models', undefined, fromEnv)).status).toBe(200);
    } finally {
      await fromEnv.close();
    }
  });
});

describe('GET /api/pricing/integrations and /api/pricing/public/{slug}', () => {
  it('list the integrations with public meters, for a CDN to keep', async () => {
    const response = await get('/api/pricing/integrations');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300, stale-while-revalidate=3600');
    expect(await response.json()).toEqual({
      integrations: [{ slug: 'search', name: 'Search', category: 'search' }],
    });
  });

  it('give the public rate table of an allowlisted integration', async () => {
    await store.db
      .insertInto('meter_rates')
      .values({
        provider: 'llm',
        meter: 'input_tokens',
        model: 'vendor/small',
        unit_price_micros: '0.25',
        public: true,
      })
      .execute();
    await store.db
      .updateTable('meter_rates')
      .set({ public: true })
      .where('provider', '=', 'llm')
      .where('model', '=', '')
      .execute();
    const response = await get('/api/pricing/public/llm');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(await response.json()).toEqual({
      slug: 'llm',
      name: 'LLM',
      category: 'ai',
      description: '',
      currency: 'USD',
      rates: [
        { meter: 'input_tokens', model: null, unit: 'token', per: 1_000_000, usd: 0.6 },
        { meter: 'output_tokens', model: null, unit: 'token', per: 1_000_000, usd: 1.8 },
        { meter: 'input_tokens', model: 'vendor/small', unit: 'token', per: 1_000_000, usd: 0.3 },
      ],
    });
    expect(await (await get('/api/pricing/public/search')).json()).toMatchObject({
      rates: [{ meter: 'call', model: null, unit: 'call', per: 1, usd: 0.0012 }],
    });
  });

  it('answer 404 Not found outside the allowlist', async () => {
    await store.db
      .insertInto('integrations')
      .values({ provider: 'private', name: 'Private', category: 'x' })
      .execute();
    for (const slug of ['nope', 'private', 'x'.repeat(300)]) {
      await expectError(await get(`/api/pricing/public/${slug}`), 404, 'Not found');
    }
    // An integration the admins disabled leaves the allowlist at once.
    const admin = await devSignIn(server, 'ops@example.test');
    const patch = (enabled: boolean) =>
      fetch(`${server.url}/api/admin/integrations/search`, {
        method: 'PATCH',
        headers: { cookie: admin, 'content-type': 'application/json' },
        body: JSON.stringify({ enabled }),
      });
    expect((await patch(false)).status).toBe(200);
    await expectError(await get('/api/pricing/public/search'), 404, 'Not found');
    expect(await (await get('/api/pricing/integrations')).json()).toEqual({
      integrations: [{ slug: 'llm', name: 'LLM', category: 'ai' }],
    });
    expect((await patch(true)).status).toBe(200);
  });
});

describe('no tenant data', () => {
  it('answers a signed-in spender byte for byte as it answers anyone, with no cookie set', async () => {
    const tenant = await createMeteredTenant(server.platform, 5_000_000);
    const email = 'spender@example.test';
    const cookie = await signedInTeammate(server, tenant.tenantId, 'owner', email);
    const spent = await fetch(`${server.url}/proxy/search/search?q=x`, {
      headers: { authorization: `Bearer ${tenant.appKey}` },
    });
    expect(spent.status).toBe(200);
    await server.platform.context.metering.settled(tenant.tenantId);
    for (const path of ['/api/pricing/models', '/api/pricing/integrations', '/api/pricing/public/search']) {
      await get(path); // The model listing is then served from memory to both.
      const anonymous = await get(path);
      const signedIn = await get(path, cookie);
      const [a, b] = [await anonymous.text(), await signedIn.text()];
      expect(signedIn.status).toBe(200);
      expect(b).toBe(a);
      for (const response of [anonymous, signedIn]) expect(response.headers.get('set-cookie')).toBeNull();
      for (const secret of [tenant.tenantId, email, '4.9988', '4998800']) expect(b).not.toContain(secret);
    }
  });
});

describe('faults', () => {
  it('answer 500 with each route own message', async () => {
    clock += HOUR;
    await sql`alter table meter_rates rename to meter_rates_away`.execute(store.db);
    await sql`alter table providers rename to providers_away`.execute(store.db);
    try {
      await expectError(await get('/api/pricing/integrations'), 500, 'Failed to load pricing integrations');
      await expectError(await get('/api/pricing/public/search'), 500, 'Failed to load pricing detail');
      await expectError(await get('/api/pricing/models'), 500, 'Internal server error');
    } finally {
      await sql`alter table providers_away rename to providers`.execute(store.db);
      await sql`alter table meter_rates_away rename to meter_rates`.execute(store.db);
    }
  });
});
