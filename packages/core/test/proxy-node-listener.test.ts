import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection } from '../src/connections/service.js';
import { upsertProvider } from '../src/proxy/providers.js';
import { generateEncryptionKey } from '../src/store/sealing.js';
import { type FakeIdp, startFakeIdp } from './support/fake-idp.js';
import {
  createMeteredTenant,
  type MeteredTenant,
  type MeteredWorld,
  POOL_CREDENTIAL,
  startMeteredWorld,
} from './support/metered.js';

// The platform served as `pnpm start` serves it: `createServer(platform.nodeListener)`, whose
// proxy calls take the Node path (no Request/Response per call) over the same metered core.

/** 10 input and 20 output tokens at 0.5 and 1.5 micros, plus the 20 % margin. */
const COMPLETION_COST = 42;
const CREDIT = 1_000_000;

describe('the proxy on the Node listener (pglite)', () => {
  let world: MeteredWorld;
  beforeAll(async () => {
    world = await startMeteredWorld('pglite', 'node');
  });
  afterAll(async () => world?.close());

  const metering = () => world.server.platform.context.metering;
  const body = (extra: object = {}) =>
    JSON.stringify({ model: 'demo-small', messages: [{ role: 'user', content: 'hi' }], ...extra });
  const complete = (
    key: string,
    init: { body?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ) =>
    fetch(`${world.server.url}/proxy/llm/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
      body: init.body ?? body(),
      ...(init.signal ? { signal: init.signal } : {}),
    });
  const until = async (done: () => boolean, ms = 5000) => {
    const deadline = Date.now() + ms;
    while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  };
  /** Wallet, ledger and usage rows of a tenant, once everything answered is settled. */
  const books = async (tenant: MeteredTenant) => {
    await until(() => metering().callsInFlight === 0);
    await metering().settled();
    const { db } = world.store;
    const wallet = await db
      .selectFrom('wallets')
      .select('balance_micros')
      .where('tenant_id', '=', tenant.tenantId)
      .executeTakeFirstOrThrow();
    const ledger = await db
      .selectFrom('ledger_entries')
      .select((eb) => eb.fn.sum<string>('amount_micros').as('sum'))
      .where('tenant_id', '=', tenant.tenantId)
      .executeTakeFirstOrThrow();
    const usage = await db
      .selectFrom('usage_events')
      .select(['cost_micros', 'estimated'])
      .where('tenant_id', '=', tenant.tenantId)
      .execute();
    return { wallet: Number(wallet.balance_micros), ledger: Number(ledger.sum), usage };
  };

  it('bills a JSON completion exactly, forwards the pool credential and strips the caller key and tenant headers', async () => {
    const tenant = await createMeteredTenant(world.server.platform, CREDIT);
    const response = await complete(tenant.appKey, {
      headers: { 'x-tenant-id': 'someone-else', 'x-service-app': 'other', 'x-request-id': 'node-call-1' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('node-call-1');
    expect((await response.json()).choices[0].message.content).toBe('Hello there');
    const sent = world.upstream.requests.at(-1)!;
    expect(sent.headers.authorization).toBe(`Bearer ${POOL_CREDENTIAL}`);
    expect(sent.headers['x-tenant-id']).toBeUndefined();
    expect(sent.headers['x-service-app']).toBeUndefined();
    expect(JSON.stringify(sent.headers)).not.toContain(tenant.appKey);
    const after = await books(tenant);
    expect(after.wallet).toBe(CREDIT - COMPLETION_COST);
    expect(after.ledger).toBe(after.wallet);
    expect(after.usage).toEqual([{ cost_micros: COMPLETION_COST, estimated: false }]);
  });

  it('streams SSE unbuffered and bills the usage of its last event', async () => {
    const tenant = await createMeteredTenant(world.server.platform, CREDIT);
    let open!: () => void;
    world.upstream.gate = new Promise((resolve) => {
      open = resolve;
    });
    try {
      const response = await complete(tenant.appKey, { body: body({ stream: true }) });
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      const reader = response.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).toContain('"content":"Hel"');
      expect(metering().callsInFlight).toBe(1);
      open();
      let rest = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        rest += new TextDecoder().decode(value);
      }
      expect(rest).toContain('[DONE]');
    } finally {
      world.upstream.gate = null;
    }
    expect(JSON.parse(world.upstream.requests.at(-1)!.body).stream_options).toEqual({ include_usage: true });
    const after = await books(tenant);
    expect(after.usage).toEqual([{ cost_micros: COMPLETION_COST, estimated: false }]);
    expect(after.wallet).toBe(CREDIT - COMPLETION_COST);
  });

  it('bills a stream its caller left mid-answer once, for what it held, and lets the upstream go', async () => {
    const tenant = await createMeteredTenant(world.server.platform, CREDIT);
    let open!: () => void;
    world.upstream.gate = new Promise((resolve) => {
      open = resolve;
    });
    const caller = new AbortController();
    try {
      const response = await fetch(`${world.server.url}/proxy/llm/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.appKey}`, 'content-type': 'application/json' },
        body: body({ stream: true }),
        signal: caller.signal,
      });
      const reader = response.body!.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain('"content":"Hel"');
      caller.abort();
      await until(() => metering().callsInFlight === 0);
      expect(metering().callsInFlight).toBe(0);
    } finally {
      open();
      world.upstream.gate = null;
    }
    const after = await books(tenant);
    // The usage event never came: billed once, the hold as an estimate, and the books agree.
    expect(after.usage).toHaveLength(1);
    expect(after.usage[0]!.estimated).toBe(true);
    expect(after.wallet).toBe(CREDIT - after.usage[0]!.cost_micros);
    expect(after.ledger).toBe(after.wallet);
  });

  it('lets the upstream call go when its caller leaves before the answer, and bills nothing', async () => {
    const tenant = await createMeteredTenant(world.server.platform, CREDIT);
    let answer!: () => void;
    world.upstream.held = new Promise((resolve) => {
      answer = resolve;
    });
    const abandonedBefore = world.upstream.abandoned;
    const sent = world.upstream.requests.length;
    const caller = new AbortController();
    try {
      const response = complete(tenant.appKey, { signal: caller.signal });
      await until(() => world.upstream.requests.length > sent);
      caller.abort();
      await expect(response).rejects.toThrow();
      await until(() => world.upstream.abandoned > abandonedBefore && metering().callsInFlight === 0);
      expect(world.upstream.abandoned).toBe(abandonedBefore + 1);
      expect(metering().callsInFlight).toBe(0);
    } finally {
      answer();
      world.upstream.held = null;
    }
    const after = await books(tenant);
    expect(after.usage).toHaveLength(0);
    expect(after.wallet).toBe(CREDIT);
    expect(after.ledger).toBe(CREDIT);
  });

  it('cuts an answer whose bill could be made durable nowhere, rather than completing it', async () => {
    const tenant = await createMeteredTenant(world.server.platform, CREDIT);
    const engine = metering();
    const record = engine.record;
    // The journal and the store both refuse (a full disk during an outage): what the engine says.
    engine.record = async (settlement) => {
      void record(settlement).catch(() => {});
      throw new Error('recorded nowhere');
    };
    /** True when the answer broke off, before or after its headers, instead of completing. */
    const cut = async (answer: Promise<Response>) => {
      try {
        await (await answer).text();
        return false;
      } catch {
        return true;
      }
    };
    try {
      expect(await cut(complete(tenant.appKey, { body: body({ stream: true }) }))).toBe(true);
      expect(await cut(complete(tenant.appKey))).toBe(true);
    } finally {
      engine.record = record;
    }
    // Still billed, from memory.
    const after = await books(tenant);
    expect(after.usage).toHaveLength(2);
    expect(after.ledger).toBe(after.wallet);
  });

  it('passes upstream errors through unbilled, and refuses at zero balance before any upstream call', async () => {
    const tenant = await createMeteredTenant(world.server.platform, CREDIT);
    world.upstream.failWith = 500;
    try {
      const failed = await complete(tenant.appKey);
      expect(failed.status).toBe(500);
      expect((await failed.json()).error.message).toBe('upstream says no');
    } finally {
      world.upstream.failWith = null;
    }
    expect((await books(tenant)).usage).toEqual([]);

    const broke = await createMeteredTenant(world.server.platform, 0);
    const sent = world.upstream.requests.length;
    const refused = await complete(broke.appKey);
    expect(refused.status).toBe(402);
    expect(refused.headers.get('x-request-id')).toBeTruthy();
    expect((await refused.json()).error.code).toBe('balance_exhausted');
    expect(world.upstream.requests.length).toBe(sent);
  });

  it('answers bad input with a 4xx in the canonical shape, never reaching the upstream', async () => {
    const tenant = await createMeteredTenant(world.server.platform, CREDIT);
    const sent = world.upstream.requests.length;
    const noKey = await fetch(`${world.server.url}/proxy/llm/v1/chat/completions`, {
      method: 'POST',
      body: body(),
    });
    expect(noKey.status).toBe(401);
    expect((await noKey.json()).error.code).toBe('unauthorized');
    const wrongKey = await complete('service_sk_not-a-real-key');
    expect(wrongKey.status).toBe(401);
    const unknown = await fetch(`${world.server.url}/proxy/nope/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.appKey}`, 'content-type': 'application/json' },
      body: body(),
    });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe('not_found');
    const tooLarge = await complete(tenant.appKey, { body: 'x'.repeat(10 * 1024 * 1024 + 1) });
    expect(tooLarge.status).toBe(413);
    // A NUL in the provider segment: refused by the input guard, as any platform URL.
    const nul = await fetch(`${world.server.url}/proxy/ll%00m/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.appKey}` },
      body: body(),
    });
    expect(nul.status).toBe(400);
    expect((await nul.json()).error.code).toBe('validation_failed');
    expect(world.upstream.requests.length).toBe(sent);
    // Malformed JSON is the upstream's to refuse: passed through unbilled.
    const malformed = await complete(tenant.appKey, { body: '{"model": ' });
    expect(malformed.status).toBe(400);
    expect((await books(tenant)).usage).toEqual([]);
  });

  it('never forwards a dot segment past the provider', async () => {
    const tenant = await createMeteredTenant(world.server.platform, CREDIT);
    const sent = world.upstream.requests.length;
    // Sent raw (fetch would resolve the dots itself): the path leaves /proxy once resolved.
    const status = await new Promise<number>((resolve, reject) => {
      const { port } = new URL(world.server.url);
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'GET',
          path: '/proxy/llm/../../healthz',
          headers: { authorization: `Bearer ${tenant.appKey}` },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(200);
    expect(world.upstream.requests.length).toBe(sent);
  });

  it('decodes an upstream that compresses anyway, and bills the usage it read', async () => {
    // An upstream that ignores `accept-encoding: identity` and answers gzip.
    const gzipping = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const answer = gzipSync(
          JSON.stringify({
            id: 'c',
            object: 'chat.completion',
            choices: [],
            usage: { prompt_tokens: 10, completion_tokens: 20 },
          }),
        );
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-encoding': 'gzip',
          'content-length': answer.byteLength,
        });
        res.end(answer);
      });
    });
    await new Promise<void>((resolve) => gzipping.listen(0, '127.0.0.1', resolve));
    try {
      const { db } = world.server.platform.store;
      const { sealer, keys } = world.server.platform.context;
      await db.insertInto('integrations').values({ provider: 'gz', name: 'Gz' }).execute();
      await upsertProvider(db, sealer, {
        slug: 'gz',
        upstreamUrl: `http://127.0.0.1:${(gzipping.address() as AddressInfo).port}`,
        dialect: 'openai',
        rates: [
          { meter: 'input_tokens', unitPriceMicros: '0.5' },
          { meter: 'output_tokens', unitPriceMicros: '1.5' },
        ],
      });
      const tenant = await createMeteredTenant(world.server.platform, CREDIT);
      await createConnection(
        { db, sealer, keys },
        { tenantId: tenant.tenantId, provider: 'gz', appId: tenant.appId },
      );
      const response = await fetch(`${world.server.url}/proxy/gz/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.appKey}`, 'content-type': 'application/json' },
        body: body(),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-encoding')).toBeNull();
      expect((await response.json()).usage).toEqual({ prompt_tokens: 10, completion_tokens: 20 });
      const after = await books(tenant);
      expect(after.usage).toEqual([{ cost_micros: COMPLETION_COST, estimated: false }]);
    } finally {
      gzipping.closeAllConnections();
      await new Promise((resolve) => gzipping.close(resolve));
    }
  });

  it('serves every other route through the same app', async () => {
    const health = await fetch(`${world.server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });
    const missing = await fetch(`${world.server.url}/no-such-route`);
    expect(missing.status).toBe(404);
  });
});

describe('the proxy on the Node listener in production on HTTPS (pglite)', () => {
  let world: MeteredWorld;
  let idp: FakeIdp;
  beforeAll(async () => {
    idp = await startFakeIdp();
    world = await startMeteredWorld('pglite', 'node', {
      env: {},
      baseUrl: 'https://platform.example',
      idpUrl: idp.url,
      production: true,
      encryptionKey: generateEncryptionKey(),
    });
  });
  afterAll(async () => {
    await world?.close();
    await idp?.close();
  });

  it("tells browsers to keep to HTTPS on every answer, and marks its own refusals nosniff, not a provider's answers", async () => {
    const tenant = await createMeteredTenant(world.server.platform, CREDIT);
    const proxied = await fetch(`${world.server.url}/proxy/llm/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.appKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo-small', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(proxied.status).toBe(200);
    expect(proxied.headers.get('strict-transport-security')).toBe('max-age=31536000');
    // The provider's headers as it sent them.
    expect(proxied.headers.get('x-content-type-options')).toBeNull();
    for (const [path, key, status] of [
      ['/proxy/llm/v1/chat/completions', 'service_sk_not-a-key', 401],
      ['/proxy/no-such-provider/v1/models', tenant.appKey, 404],
    ] as const) {
      const refused = await fetch(`${world.server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(refused.status, path).toBe(status);
      expect(refused.headers.get('strict-transport-security'), path).toBe('max-age=31536000');
      expect(refused.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
  });
});

describe('the proxy on the Node listener when the store fails (pglite)', () => {
  it('answers in the canonical error shape with its request id, and keeps serving', async () => {
    const world = await startMeteredWorld('pglite', 'node');
    try {
      const tenant = await createMeteredTenant(world.server.platform, CREDIT);
      // The store goes away under the platform: the key lookup throws.
      await world.store.close();
      const response = await fetch(`${world.server.url}/proxy/llm/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tenant.appKey}`,
          'content-type': 'application/json',
          'x-request-id': 'store-gone-1',
        },
        body: JSON.stringify({ model: 'demo-small', messages: [] }),
      });
      expect(response.status).toBeGreaterThanOrEqual(500);
      expect(response.headers.get('x-request-id')).toBe('store-gone-1');
      expect((await response.json()).error.code).toMatch(/^(internal_error|service_unavailable)$/);
      const again = await fetch(`${world.server.url}/proxy/llm/v1/models`, {
        headers: { authorization: 'Bearer not-a-service-key' },
      });
      expect(again.status).toBe(401);
    } finally {
      await world.server.close().catch(() => {});
      await world.upstream.close();
    }
  });
});
