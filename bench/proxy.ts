/**
 * `pnpm bench proxy`: a chat completion through the metered proxy (key, binding, credit hold,
 * forward, usage read, settlement with ledger, usage row and events), through a bare pass-through
 * proxy on the same stack (Hono on the Node server, fetch upstream, body piped back; no auth, no
 * billing), and straight to the upstream, in one run on the embedded store.
 * Targets (issue 3): metered throughput at least 0.5 of the bare pass-through; added p50 latency
 * under 3 ms.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { post } from '@service/core/billing';
import { createConnection } from '@service/core/connections';
import { silentLogger } from '@service/core/http';
import { ensureAccount } from '@service/core/identity';
import { createPlatform } from '@service/core/platform';
import { upsertProvider } from '@service/core/proxy';
import { createStore, generateEncryptionKey } from '@service/core/store';
import { Hono } from 'hono';
import { type BenchOutcome, measure, sequentialLatency, serveOnLoopback } from './support/measure.js';

const THROUGHPUT_TARGET = 0.5;
const ADDED_P50_TARGET_MS = 3;
const COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  model: 'bench-model',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Hello from the bench upstream.' },
      finish_reason: 'stop',
    },
  ],
  usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 },
});
const REQUEST = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Say hello.' }] });

export async function proxyBenchmark(): Promise<BenchOutcome> {
  const upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(COMPLETION));
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

  const store = await createStore({ url: 'memory://' });
  const platform = await createPlatform({
    store,
    env: {},
    logger: silentLogger,
    encryptionKey: generateEncryptionKey(),
  });
  const { keys, sealer } = platform.context;
  const { db } = platform.store;
  await db.insertInto('integrations').values({ provider: 'bench-llm', name: 'Bench LLM' }).execute();
  await upsertProvider(db, sealer, {
    slug: 'bench-llm',
    upstreamUrl,
    dialect: 'openai',
    credential: 'sk-bench-pool',
    rates: [
      { meter: 'input_tokens', unitPriceMicros: '0.15' },
      { meter: 'output_tokens', unitPriceMicros: '0.6' },
    ],
  });
  const { tenantId } = await ensureAccount(db, { subject: 'bench-proxy', email: 'bench@example.com' });
  const app = await db
    .insertInto('apps')
    .values({ tenant_id: tenantId, slug: 'bench', name: 'Bench' })
    .returning('id')
    .executeTakeFirstOrThrow();
  await createConnection({ db, sealer, keys }, { tenantId, provider: 'bench-llm', appId: app.id });
  await post(db, { tenantId, amountMicros: 1_000_000_000_000, kind: 'grant', idempotencyKey: 'bench' });
  const { key } = await keys.issue({ tenantId, kind: 'app', appId: app.id });

  // The same stack without auth or billing: Hono, the Node server, fetch, the body piped back.
  const bare = new Hono().all('/proxy/:provider/*', async (c) => {
    const path = new URL(c.req.url).pathname.replace(/^\/proxy\/[^/]+/, '');
    const response = await fetch(`${upstreamUrl}${path}`, {
      method: c.req.method,
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-pool' },
      body: await c.req.text(),
    });
    return new Response(response.body, { status: response.status, headers: response.headers });
  });

  const metered = await serveOnLoopback(platform.fetch);
  const passThrough = await serveOnLoopback(bare.fetch);
  try {
    const request = (url: string) => ({
      url,
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: REQUEST,
    });
    const targets = {
      metered: request(`${metered.url}/proxy/bench-llm/v1/chat/completions`),
      bare: request(`${passThrough.url}/proxy/bench-llm/v1/chat/completions`),
      direct: request(`${upstreamUrl}/v1/chat/completions`),
    };
    const load = await measure(targets);
    const latency = await sequentialLatency(targets);
    const ratio = load.metered.requestsPerSecond / load.bare.requestsPerSecond;
    const addedP50 = latency.metered.p50Ms - latency.direct.p50Ms;
    const addedP99 = latency.metered.p99Ms - latency.direct.p99Ms;
    const billed = await db
      .selectFrom('usage_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();

    console.log('\nPOST /v1/chat/completions: metered proxy vs bare pass-through vs direct upstream');
    for (const name of ['metered', 'bare', 'direct'] as const) {
      const r = load[name];
      const l = latency[name];
      console.log(
        `  ${name.padEnd(8)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s (10 connections)   one at a time: p50 ${l.p50Ms.toFixed(2)} ms  p99 ${l.p99Ms.toFixed(2)} ms   non-2xx ${r.non2xx}  errors ${r.errors}`,
      );
    }
    console.log(`  metered calls billed: ${billed.n}`);
    const throughputMet =
      ratio >= THROUGHPUT_TARGET && load.metered.non2xx === 0 && load.metered.errors === 0;
    const latencyMet = addedP50 < ADDED_P50_TARGET_MS;
    console.log(
      `  ratio ${ratio.toFixed(2)} of the bare pass-through's throughput (target >= ${THROUGHPUT_TARGET}): ${throughputMet ? 'met' : 'MISSED'}`,
    );
    console.log(
      `  added latency over direct: p50 ${addedP50.toFixed(2)} ms (target < ${ADDED_P50_TARGET_MS}): ${latencyMet ? 'met' : 'MISSED'}; p99 ${addedP99.toFixed(2)} ms`,
    );
    return { ratio, target: THROUGHPUT_TARGET, metTarget: throughputMet && latencyMet };
  } finally {
    await metered.close();
    await passThrough.close();
    await platform.close();
    await store.close();
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  }
}
