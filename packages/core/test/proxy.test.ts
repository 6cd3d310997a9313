/**
 * The metering provider proxy over real HTTP, against a fake upstream on loopback.
 *
 * @see docs/proxy.md
 */
import { request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../src/billing/ledger.js';
import { createConnection } from '../src/connections/service.js';
import { upsertProvider } from '../src/proxy/providers.js';
import type { FakeUpstream } from './support/fake-upstream.js';
import {
  createMeteredTenant,
  type MeteredWorld,
  POOL_CREDENTIAL,
  startMeteredWorld,
} from './support/metered.js';
import { createTenantFixture, type RunningPlatform } from './support/platform.js';
import { STORE_KINDS, type TestStore } from './support/stores.js';

/** 10 input tokens x 0.5 + 20 output x 1.5 = 35 micros, x 1.2 margin. */
const COMPLETION_COST = 42;
const SEARCH_COST = 1200;

for (const kind of STORE_KINDS) {
  describe(`metering proxy (${kind})`, () => {
    let world: MeteredWorld;
    let store: TestStore;
    let upstream: FakeUpstream;
    let server: RunningPlatform;

    beforeAll(async () => {
      world = await startMeteredWorld(kind);
      ({ store, upstream, server } = world);
    });
    afterAll(async () => world?.close());

    const call = (key: string, path: string, init: RequestInit = {}) =>
      fetch(`${server.url}/proxy${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
      });
    const complete = (key: string, body: object = {}, headers: Record<string, string> = {}) =>
      call(key, '/llm/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'demo-small', messages: [{ role: 'user', content: 'hi' }], ...body }),
        headers,
      });
    // Calls settle just after their response; these reads wait for that, as balance reads do.
    const settled = () => server.platform.context.metering.settled();
    const balanceOf = async (tenantId: string) => {
      await settled();
      const wallet = await store.db
        .selectFrom('wallets')
        .select('balance_micros')
        .where('tenant_id', '=', tenantId)
        .executeTakeFirstOrThrow();
      return wallet.balance_micros;
    };
    const ledgerSum = async (tenantId: string) => {
      await settled();
      const row = await store.db
        .selectFrom('ledger_entries')
        .select((eb) => eb.fn.sum<number>('amount_micros').as('sum'))
        .where('tenant_id', '=', tenantId)
        .executeTakeFirstOrThrow();
      return row.sum;
    };
    const usageRows = async (tenantId: string) => {
      await settled();
      return store.db.selectFrom('usage_events').selectAll().where('tenant_id', '=', tenantId).execute();
    };
    const eventsOf = async (appId: string) => {
      await settled();
      return store.db
        .selectFrom('app_events')
        .select(['seq', 'kind', 'payload'])
        .where('app_id', '=', appId)
        .orderBy('seq')
        .execute();
    };

    it('bills a completion from the usage the upstream reports, in one transaction with its events', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      const response = await complete(tenant.appKey);
      expect(response.status).toBe(200);
      expect((await response.json()).choices[0].message.content).toBe('Hello there');
      expect(await balanceOf(tenant.tenantId)).toBe(1_000_000 - COMPLETION_COST);
      expect(Number(await ledgerSum(tenant.tenantId))).toBe(1_000_000 - COMPLETION_COST);
      const [usage] = await usageRows(tenant.tenantId);
      expect(usage).toMatchObject({
        provider: 'llm',
        model: 'demo-small',
        cost_micros: COMPLETION_COST,
        app_id: tenant.appId,
        connection_id: tenant.llmConnectionId,
        estimated: false,
        quantities: { input_tokens: 10, output_tokens: 20, call: 1 },
        meter_costs: { input_tokens: 6, output_tokens: 36 },
      });
      // The usage row names its own debit: the ledger entry of this call, for its cost.
      const debit = await store.db
        .selectFrom('ledger_entries')
        .selectAll()
        .where('id', '=', usage!.ledger_entry_id)
        .executeTakeFirstOrThrow();
      expect(debit).toMatchObject({
        tenant_id: tenant.tenantId,
        kind: 'usage',
        idempotency_key: `usage:${usage!.id}`,
      });
      expect(Number(debit.amount_micros)).toBe(-COMPLETION_COST);
      const events = await eventsOf(tenant.appId);
      expect(events.map((e) => e.kind)).toEqual(
        expect.arrayContaining(['billing.usage_recorded', 'billing.balance_changed']),
      );
      expect(events.find((e) => e.kind === 'billing.usage_recorded')?.payload).toMatchObject({
        provider: 'llm',
        micros: COMPLETION_COST,
      });
      expect(events.findLast((e) => e.kind === 'billing.balance_changed')?.payload).toMatchObject({
        remaining_micros: 1_000_000 - COMPLETION_COST,
      });
      // Read your own spend: the balance endpoint already answers the new balance.
      const balance = await fetch(`${server.url}/api/billing/balance`, {
        headers: { authorization: `Bearer ${tenant.appKey}` },
      });
      expect((await balance.json()).credits_remaining_micros).toBe(1_000_000 - COMPLETION_COST);
    });

    it('forwards with the managed-pool credential and drops the caller key and any tenant header', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      const other = await createTenantFixture(server.platform, 1_000_000);
      const response = await complete(
        tenant.appKey,
        {},
        {
          'x-service-tenant-id': other.tenantId,
          'x-tenant-id': other.tenantId,
          'x-service-user-id': 'spoofed',
          // Read as X-Service-Tenant-Id by CGI-style servers.
          x_service_tenant_id: other.tenantId,
          'x-service_tenant': other.tenantId,
          'x-trace': 'kept',
        },
      );
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      const seen = upstream.requests.at(-1)!;
      expect(seen.headers.authorization).toBe(`Bearer ${POOL_CREDENTIAL}`);
      expect(JSON.stringify(seen.headers)).not.toContain(tenant.appKey);
      expect(seen.headers['x-service-tenant-id']).toBeUndefined();
      expect(seen.headers['x-tenant-id']).toBeUndefined();
      expect(seen.headers['x-service-user-id']).toBeUndefined();
      expect(JSON.stringify(seen.headers)).not.toContain(other.tenantId);
      expect(seen.headers['x-trace']).toBe('kept');
      expect(await balanceOf(other.tenantId)).toBe(1_000_000);
      expect(await balanceOf(tenant.tenantId)).toBe(1_000_000 - COMPLETION_COST);
    });

    it('accepts the key in x-api-key, and bills a per-call provider its call price', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      const response = await fetch(`${server.url}/proxy/search/search?q=x`, {
        headers: { 'x-api-key': tenant.appKey },
      });
      expect(response.status).toBe(200);
      expect((await response.json()).results).toHaveLength(1);
      expect(upstream.requests.at(-1)!.headers['x-api-key']).toBe(POOL_CREDENTIAL);
      expect(await balanceOf(tenant.tenantId)).toBe(1_000_000 - SEARCH_COST);
    });

    it('answers 402 at zero balance before any upstream call, and writes no usage', async () => {
      const broke = await createMeteredTenant(server.platform, 0);
      const before = upstream.requests.length;
      const response = await complete(broke.appKey);
      expect(response.status).toBe(402);
      expect(response.headers.get('service-error-code')).toBe('balance_exhausted');
      expect((await response.json()).error).toMatchObject({ code: 'balance_exhausted', slug: 'llm' });
      expect(upstream.requests.length).toBe(before);
      expect(await usageRows(broke.tenantId)).toEqual([]);
      // Overdrawn is refused too.
      await post(store.db, {
        tenantId: broke.tenantId,
        amountMicros: -5,
        kind: 'usage',
        idempotencyKey: 'od',
      });
      expect((await complete(broke.appKey)).status).toBe(402);
    });

    it('passes free routes at zero balance, unbilled', async () => {
      const broke = await createMeteredTenant(server.platform, 0);
      const response = await call(broke.appKey, '/llm/v1/models');
      expect(response.status).toBe(200);
      // The provider segment may be percent-encoded; the rest of the path is forwarded as sent.
      expect((await call(broke.appKey, '/ll%6d/v1/models?x=1')).status).toBe(200);
      expect(upstream.requests.at(-1)!.path).toBe('/v1/models');
      expect((await response.json()).data[0].id).toBe('demo-small');
      expect(await usageRows(broke.tenantId)).toEqual([]);
    });

    it('answers 403 to a key without a binding to the provider', async () => {
      const unbound = await createTenantFixture(server.platform, 1_000_000);
      const response = await complete(unbound.appKey);
      expect(response.status).toBe(403);
      const body = await response.json();
      expect(body.error).toMatchObject({ code: 'not_connected', slug: 'llm' });
      expect(body.error.connect_url).toMatch(/\/integrations\/llm$/);
      // A Connection Key reaches only its own connection's provider.
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      const llmKey = await server.platform.context.keys.issue({
        tenantId: tenant.tenantId,
        kind: 'connection',
        connectionId: tenant.llmConnectionId,
      });
      expect((await complete(llmKey.key)).status).toBe(200);
      expect((await call(llmKey.key, '/search/search')).status).toBe(403);
    });

    it('answers 401 to a missing, unknown, revoked or JWT bearer, and 404 to an unknown provider', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      const noKey = await fetch(`${server.url}/proxy/llm/v1/chat/completions`, { method: 'POST' });
      expect(noKey.status).toBe(401);
      expect((await noKey.json()).error.code).toBe('unauthorized');
      expect((await complete('service_sk_unknownunknownunknownunknownunknownabcdefg')).status).toBe(401);
      expect((await complete('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln')).status).toBe(401);
      await server.platform.context.keys.revoke(tenant.appKeyId);
      expect((await complete(tenant.appKey)).status).toBe(401);
      const fresh = await createMeteredTenant(server.platform, 1_000_000);
      const unknown = await call(fresh.appKey, '/nope/v1/x');
      expect(unknown.status).toBe(404);
      expect((await unknown.json()).error.code).toBe('not_found');
    });

    it('streams: the first upstream chunk reaches the caller before the upstream finishes', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      let open!: () => void;
      upstream.gate = new Promise((resolve) => {
        open = resolve;
      });
      try {
        const response = await complete(tenant.appKey, { stream: true });
        expect(response.headers.get('content-type')).toContain('text/event-stream');
        const reader = response.body!.getReader();
        const first = new TextDecoder().decode((await reader.read()).value);
        expect(first).toContain('"content":"Hel"');
        // Still held upstream: nothing billed yet.
        expect(await usageRows(tenant.tenantId)).toEqual([]);
        open();
        let rest = '';
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          rest += new TextDecoder().decode(value);
        }
        expect(rest).toContain('[DONE]');
      } finally {
        upstream.gate = null;
      }
      // The proxy asked for the final usage chunk, and billed from it.
      expect(JSON.parse(upstream.requests.at(-1)!.body).stream_options).toEqual({ include_usage: true });
      const [usage] = await usageRows(tenant.tenantId);
      expect(usage).toMatchObject({ cost_micros: COMPLETION_COST, estimated: false });
    });

    it('bills a call whose app is deleted while it streams, and the calls settled with it', async () => {
      const doomed = await createMeteredTenant(server.platform, 1_000_000);
      const other = await createMeteredTenant(server.platform, 1_000_000);
      let open!: () => void;
      upstream.gate = new Promise((resolve) => {
        open = resolve;
      });
      const readAll = async (response: Response) => {
        expect(response.status).toBe(200);
        const reader = response.body!.getReader();
        let text = new TextDecoder().decode((await reader.read()).value);
        return async () => {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) return text;
            text += new TextDecoder().decode(value);
          }
        };
      };
      try {
        // Both calls are answered, held upstream mid-stream, so they settle in one batch.
        const [rest, otherRest] = await Promise.all([
          readAll(await complete(doomed.appKey, { stream: true })),
          readAll(await complete(other.appKey, { stream: true })),
        ]);
        // The app goes, and its keys with it, before its call ends.
        await server.platform.context.deployments.remove(doomed.tenantId, doomed.appId);
        open();
        expect(await rest()).toContain('[DONE]');
        expect(await otherRest()).toContain('[DONE]');
      } finally {
        upstream.gate = null;
      }
      expect(await balanceOf(doomed.tenantId)).toBe(1_000_000 - COMPLETION_COST);
      expect(await balanceOf(other.tenantId)).toBe(1_000_000 - COMPLETION_COST);
      const [usage] = await usageRows(doomed.tenantId);
      // Billed, no longer naming the deleted app or its key, as if deleted after the call.
      expect(usage).toMatchObject({ cost_micros: COMPLETION_COST, app_id: null, key_id: null });
      expect(usage!.connection_id).toBe(doomed.llmConnectionId);
      expect((await usageRows(other.tenantId))[0]).toMatchObject({
        app_id: other.appId,
        cost_micros: COMPLETION_COST,
      });
    });

    it('clears the connection, app and key of usage rows when those are deleted later', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      expect((await complete(tenant.appKey)).status).toBe(200);
      const [billed] = await usageRows(tenant.tenantId);
      expect(billed).toMatchObject({ app_id: tenant.appId, connection_id: tenant.llmConnectionId });
      expect(billed!.key_id).not.toBeNull();
      await store.db.deleteFrom('connections').where('id', '=', tenant.llmConnectionId).execute();
      expect((await usageRows(tenant.tenantId))[0]).toMatchObject({
        app_id: tenant.appId,
        connection_id: null,
        key_id: billed!.key_id,
      });
      await server.platform.context.deployments.remove(tenant.tenantId, tenant.appId);
      expect((await usageRows(tenant.tenantId))[0]).toMatchObject({
        app_id: null,
        connection_id: null,
        key_id: null,
      });
      expect(Number(await ledgerSum(tenant.tenantId))).toBe(1_000_000 - COMPLETION_COST);
    });

    it('passes upstream errors through as they are, unbilled, and releases the hold', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      upstream.failWith = 503;
      try {
        const response = await complete(tenant.appKey);
        expect(response.status).toBe(503);
        expect((await response.json()).error.message).toBe('upstream says no');
      } finally {
        upstream.failWith = null;
      }
      expect(await usageRows(tenant.tenantId)).toEqual([]);
      // The call's own hold is gone (what remains, if anything, is the instance's lease).
      const holds = await store.db
        .selectFrom('holds')
        .selectAll()
        .where('app_id', '=', tenant.appId)
        .execute();
      expect(holds).toEqual([]);
      expect(await balanceOf(tenant.tenantId)).toBe(1_000_000);
    });

    it.each([
      ['a NUL', 'demo-small\u0000'],
      ['an unpaired surrogate', 'demo-small\ud800'],
    ])(
      'refuses a model with %s (the store keeps it as text), unforwarded and unbilled',
      async (_case, model) => {
        const tenant = await createMeteredTenant(server.platform, 1_000_000);
        const before = upstream.requests.length;
        const response = await complete(tenant.appKey, { model });
        expect(response.status).toBe(400);
        expect((await response.json()).error).toMatchObject({
          code: 'validation_failed',
          message: expect.stringMatching(/^model contains an? (NUL character|unpaired UTF-16 surrogate)$/),
        });
        expect(upstream.requests.length).toBe(before);
        expect(await balanceOf(tenant.tenantId)).toBe(1_000_000);
        expect(await usageRows(tenant.tenantId)).toEqual([]);
      },
    );

    it('answers 400 for a model without a price and 413 for an oversized body', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      const { sealer, keys } = server.platform.context;
      const { db } = server.platform.store;
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
      const before = upstream.requests.length;
      const unpriced = await call(tenant.appKey, '/picky/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'other-model' }),
      });
      expect(unpriced.status).toBe(400);
      expect((await unpriced.json()).error).toMatchObject({
        code: 'validation_failed',
        message: 'No price for model other-model on picky',
      });
      expect(upstream.requests.length).toBe(before);
      const priced = await call(tenant.appKey, '/picky/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'priced-model' }),
      });
      expect(priced.status).toBe(200);
      await priced.arrayBuffer();

      const huge = await call(tenant.appKey, '/llm/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'demo-small', pad: 'x'.repeat(11 * 1024 * 1024) }),
      });
      expect(huge.status).toBe(413);
      expect((await huge.json()).error.code).toBe('payload_too_large');
    });

    it('prices a JSON body by its model whatever its content type says (fetch labels a string text/plain)', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      for (const type of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', '']) {
        const response = await call(tenant.appKey, '/llm/v1/chat/completions', {
          method: 'POST',
          body: JSON.stringify({ model: 'demo-small', messages: [] }),
          headers: { 'content-type': type },
        });
        expect(response.status, type).toBe(200);
        await response.arrayBuffer();
      }
      const rows = await usageRows(tenant.tenantId);
      expect(rows.map((row) => [row.model, row.estimated, row.cost_micros])).toEqual([
        ['demo-small', false, COMPLETION_COST],
        ['demo-small', false, COMPLETION_COST],
        ['demo-small', false, COMPLETION_COST],
      ]);
    });

    it('prices a call whose model it cannot read at the highest rate: hiding the model never lowers the price', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      const { sealer, keys } = server.platform.context;
      const { db } = server.platform.store;
      await db.insertInto('integrations').values({ provider: 'tiered', name: 'Tiered' }).execute();
      // Any model 0.5 and 1.5 micros a token, `large` ten times that.
      await upsertProvider(db, sealer, {
        slug: 'tiered',
        upstreamUrl: upstream.url,
        dialect: 'openai',
        rates: [
          { meter: 'input_tokens', unitPriceMicros: '0.5' },
          { meter: 'output_tokens', unitPriceMicros: '1.5' },
          { meter: 'input_tokens', model: 'large', unitPriceMicros: '5' },
          { meter: 'output_tokens', model: 'large', unitPriceMicros: '15' },
        ],
      });
      await createConnection(
        { db, sealer, keys },
        { tenantId: tenant.tenantId, provider: 'tiered', appId: tenant.appId },
      );
      const send = async (body: object, type: string) => {
        const response = await call(tenant.appKey, '/tiered/v1/chat/completions', {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': type },
        });
        expect(response.status, type).toBe(200);
        await response.arrayBuffer();
      };
      // The same body as an upload streams through unread; the upstream may still read its model.
      await send({ model: 'large', messages: [] }, 'application/octet-stream');
      await send({ model: 'large', messages: [] }, 'application/json');
      await send({ messages: [] }, 'application/json');
      await send({ model: 'small', messages: [] }, 'application/json');
      const rows = await usageRows(tenant.tenantId);
      // 10 input and 20 output tokens, plus the 20 % margin: 420 micros at `large`'s rates, 42 at any model's.
      const billed = rows.map((row) => `${row.model ?? 'unread'} ${row.cost_micros}`).sort();
      expect(billed).toEqual(['large 420', 'small 42', 'unread 420', 'unread 420']);
    });

    it('refuses with 415 a body it cannot read to meter (compressed, UTF-16), before any hold or upstream call', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      const before = upstream.requests.length;
      const body = JSON.stringify({ model: 'demo-small', stream: true, messages: [] });
      for (const [label, bytes, headers] of [
        ['gzip', gzipSync(body), { 'content-encoding': 'gzip' }],
        ['UTF-16', Buffer.from(body, 'utf16le'), {}],
      ] as const) {
        const response = await call(tenant.appKey, '/llm/v1/chat/completions', {
          method: 'POST',
          body: bytes,
          headers: { 'content-type': 'application/json', ...headers },
        });
        expect(response.status, label).toBe(415);
        expect((await response.json()).error.code, label).toBe('unsupported_media_type');
      }
      expect(upstream.requests.length).toBe(before);
      expect(await balanceOf(tenant.tenantId)).toBe(1_000_000);
    });

    it("never bills output tokens past the request's own bound", async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      upstream.usage = { prompt_tokens: 10, completion_tokens: 1_000_000 };
      try {
        const response = await complete(tenant.appKey, { max_tokens: 20 });
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      } finally {
        upstream.usage = { prompt_tokens: 10, completion_tokens: 20 };
      }
      // 10 input and 20 output tokens: what the request allowed, not the million reported.
      expect(await balanceOf(tenant.tenantId)).toBe(1_000_000 - COMPLETION_COST);
    });

    it('bills calls that report no usage the same expected cost, however their credit was admitted', async () => {
      // Warm: the model's running average is what a call without usage is billed.
      await (await complete((await createMeteredTenant(server.platform, 1_000_000)).appKey)).arrayBuffer();
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      upstream.usage = null;
      try {
        // The first is admitted in the store (taking a lease), the rest from the lease, which
        // reserves each one's worst case (100 000 output tokens: 180 000 micros).
        for (let i = 0; i < 3; i++) {
          const response = await complete(tenant.appKey, { max_tokens: 100_000 });
          expect(response.status).toBe(200);
          await response.arrayBuffer();
        }
      } finally {
        upstream.usage = { prompt_tokens: 10, completion_tokens: 20 };
      }
      const rows = await usageRows(tenant.tenantId);
      expect(rows.map((row) => row.estimated)).toEqual([true, true, true]);
      expect(new Set(rows.map((row) => row.cost_micros))).toEqual(new Set([COMPLETION_COST]));
    });

    it('bills a 2xx answer without a body (a 204, an answer to HEAD) as any other', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      const deleted = await call(tenant.appKey, '/search/empty', { method: 'DELETE' });
      expect(deleted.status).toBe(204);
      const head = await call(tenant.appKey, '/search/search?q=x', { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(await head.text()).toBe('');
      expect(await balanceOf(tenant.tenantId)).toBe(1_000_000 - 2 * SEARCH_COST);
      expect(await usageRows(tenant.tenantId)).toHaveLength(2);
    });

    it('answers 413 to an upload streamed through past the limit, and 405 to a method it does not forward', async () => {
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      /** One request on a connection of its own (an upload cut short leaves its connection unusable). */
      const alone = (method: string, headers: Record<string, string>, body?: Buffer) =>
        new Promise<{ status: number; allow: string | undefined; code: unknown; body: string }>(
          (resolve, reject) => {
            const request = httpRequest(`${server.url}/proxy/search/search`, {
              method,
              agent: false,
              headers: { authorization: `Bearer ${tenant.appKey}`, ...headers },
            });
            request.on('response', async (response) => {
              let text = '';
              for await (const chunk of response) text += chunk;
              resolve({
                status: response.statusCode ?? 0,
                allow: response.headers.allow,
                code: response.headers['service-error-code'],
                body: text,
              });
            });
            request.on('error', reject);
            request.end(body);
          },
        );
      // Chunked, so only the reading finds it too large.
      const huge = await alone(
        'POST',
        { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
        Buffer.alloc(11 * 1024 * 1024),
      );
      expect(huge.status).toBe(413);
      expect(JSON.parse(huge.body).error.code).toBe('payload_too_large');
      const trace = await alone('TRACE', {});
      expect(trace.status).toBe(405);
      expect(JSON.parse(trace.body).error.code).toBe('method_not_allowed');
      expect(trace.code).toBe('method_not_allowed');
      expect(trace.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
      const model = await complete(tenant.appKey, { model: 'm'.repeat(257) });
      expect(model.status).toBe(400);
      expect((await model.json()).error.message).toBe('model must be at most 256 characters');
      expect(await balanceOf(tenant.tenantId)).toBe(1_000_000);
    });

    it('bills 200 concurrent calls exactly: only calls in flight can overdraw, by no more than their price', async () => {
      // Credit for 50.5 searches: 50 hold their full price, the 51st holds the last 600 micros.
      const start = 50 * SEARCH_COST + SEARCH_COST / 2;
      const tenant = await createMeteredTenant(server.platform, start);
      const statuses = await Promise.all(
        Array.from({ length: 200 }, async () => {
          const response = await call(tenant.appKey, '/search/search');
          await response.arrayBuffer();
          return response.status;
        }),
      );
      const admitted = statuses.filter((s) => s === 200).length;
      expect(statuses.filter((s) => s !== 200 && s !== 402)).toEqual([]);
      expect(admitted).toBe(51);
      const usage = await usageRows(tenant.tenantId);
      expect(usage).toHaveLength(admitted);
      const billed = usage.reduce((sum, u) => sum + u.cost_micros, 0);
      expect(await balanceOf(tenant.tenantId)).toBe(start - billed);
      expect(Number(await ledgerSum(tenant.tenantId))).toBe(start - billed);
      expect(await balanceOf(tenant.tenantId)).toBe(-SEARCH_COST / 2);
    });
  });
}

describe('metering proxy, an upstream that answers an upload cut off at the limit', () => {
  let world: MeteredWorld;
  beforeAll(async () => {
    // In-process, as the demo's stand-in: it reads what comes of the body, and refuses what it got.
    world = await startMeteredWorld('pglite', 'fetch', {
      upstreamFetch: (async (_url: RequestInfo | URL, init?: RequestInit) => {
        try {
          await new Response(init?.body ?? null).arrayBuffer();
        } catch {}
        return new Response('{"error":{"message":"messages is required"}}', {
          status: 400,
          headers: { 'content-type': 'application/json' },
        });
      }) as typeof fetch,
    });
  });
  afterAll(async () => world?.close());

  it('says the upload was too large, not what the upstream made of its cut-off part, and bills nothing', async () => {
    const tenant = await createMeteredTenant(world.server.platform, 1_000_000);
    const status = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = httpRequest(`${world.server.url}/proxy/llm/v1/chat/completions`, {
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${tenant.appKey}`,
          'content-type': 'application/octet-stream',
          'transfer-encoding': 'chunked',
        },
      });
      request.on('response', async (response) => {
        let text = '';
        for await (const chunk of response) text += chunk;
        resolve({ status: response.statusCode ?? 0, body: text });
      });
      request.on('error', reject);
      request.end(Buffer.alloc(11 * 1024 * 1024));
    });
    expect(status.status).toBe(413);
    expect(JSON.parse(status.body).error.code).toBe('payload_too_large');
    await world.server.platform.context.metering.settled();
    const usage = await world.store.db
      .selectFrom('usage_events')
      .select('id')
      .where('tenant_id', '=', tenant.tenantId)
      .execute();
    expect(usage).toEqual([]);
  });
});
