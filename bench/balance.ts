/**
 * `pnpm bench balance`: `GET /api/billing/balance` with an App Key (rate-limit upsert, key lookup,
 * wallet read on the embedded store) against a bare Hono route answering the same JSON.
 * Target: at least 0.3 of the bare route's throughput.
 */
import { post } from '@service/core/billing';
import { silentLogger } from '@service/core/http';
import { ensureAccount } from '@service/core/identity';
import { createPlatform } from '@service/core/platform';
import { createStore } from '@service/core/store';
import { Hono } from 'hono';
import { type BenchOutcome, compare, report, serveOnLoopback } from './support/measure.js';

const TARGET = 0.3;

export async function balanceBenchmark(): Promise<BenchOutcome> {
  const store = await createStore({ url: 'memory://' });
  // The limit still counts every request in the store (its real cost); it just never trips.
  const unlimited = { limit: Number.MAX_SAFE_INTEGER, windowMs: 60_000 };
  const platform = await createPlatform({
    store,
    env: {},
    logger: silentLogger,
    rateLimits: { billingBalance: unlimited },
  });
  const { keys } = platform.context;
  const { db } = platform.store;
  const { tenantId } = await ensureAccount(db, { subject: 'bench-user', email: 'bench@example.com' });
  const app = await db
    .insertInto('apps')
    .values({ tenant_id: tenantId, slug: 'bench', name: 'Bench' })
    .returning('id')
    .executeTakeFirstOrThrow();
  await post(db, { tenantId, amountMicros: 25_000_000, kind: 'grant', idempotencyKey: 'bench' });
  const { key } = await keys.issue({ tenantId, kind: 'app', appId: app.id });

  const body = {
    credits_remaining_micros: 25_000_000,
    currency: 'USD',
    top_up_url: platform.context.topUpUrl,
  };
  const bare = new Hono().get('/api/billing/balance', (c) => c.json(body));

  const subjectServer = await serveOnLoopback(platform.fetch);
  const bareServer = await serveOnLoopback(bare.fetch);
  try {
    const headers = { authorization: `Bearer ${key}` };
    const { subject, baseline } = await compare(
      { url: `${subjectServer.url}/api/billing/balance`, headers },
      { url: `${bareServer.url}/api/billing/balance`, headers },
    );
    return report('GET /api/billing/balance with an App Key vs a bare Hono route', subject, baseline, TARGET);
  } finally {
    await subjectServer.close();
    await bareServer.close();
    await store.close();
  }
}
