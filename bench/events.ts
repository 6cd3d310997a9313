/**
 * `pnpm bench events`: latency from a committed debit to its `billing.balance_changed` on 100
 * open event streams (20 apps of one tenant, 5 streams each, over HTTP on loopback), measured on
 * the embedded store. A debit counts as committed when its call returns; with the store on its
 * own thread an event may reach a stream before that, and counts as 0 ms. Target: p99 under
 * 50 ms.
 */
import { post } from '@service/core/billing';
import { silentLogger } from '@service/core/http';
import { ensureAccount } from '@service/core/identity';
import { createPlatform } from '@service/core/platform';
import { createStore } from '@service/core/store';
import { createParser } from 'eventsource-parser';
import { type BenchOutcome, serveOnLoopback } from './support/measure.js';

const TARGET_P99_MS = 50;
const APPS = 20;
const STREAMS_PER_APP = 5;
const DEBITS = 40;

export async function eventsBenchmark(): Promise<BenchOutcome> {
  const store = await createStore({ url: 'memory://' });
  const platform = await createPlatform({ store, env: {}, logger: silentLogger });
  const { keys, metering } = platform.context;
  const { db } = platform.store;
  const { tenantId } = await ensureAccount(db, { subject: 'bench-events', email: 'events@example.com' });
  await post(db, { tenantId, amountMicros: 1_000_000_000, kind: 'grant', idempotencyKey: 'bench' });
  const appKeys: string[] = [];
  for (let i = 0; i < APPS; i++) {
    const app = await db
      .insertInto('apps')
      .values({ tenant_id: tenantId, slug: `bench-${i}`, name: `Bench ${i}` })
      .returning('id')
      .executeTakeFirstOrThrow();
    appKeys.push((await keys.issue({ tenantId, kind: 'app', appId: app.id })).key);
  }
  const server = await serveOnLoopback(platform.fetch);
  /** When each debit's call returned, by the balance it left. */
  const committedAt = new Map<number, number>();
  const arrivals: Array<{ remaining: number; at: number }> = [];
  const aborts: AbortController[] = [];
  try {
    const opened = appKeys.flatMap((key) =>
      Array.from({ length: STREAMS_PER_APP }, async () => {
        const abort = new AbortController();
        aborts.push(abort);
        const response = await fetch(`${server.url}/api/deployments/me/events`, {
          headers: { authorization: `Bearer ${key}` },
          signal: abort.signal,
        });
        if (response.status !== 200) throw new Error(`stream refused: ${response.status}`);
        const parser = createParser({
          onEvent: (event) => {
            if (event.event !== 'billing.balance_changed') return;
            const at = performance.now();
            arrivals.push({ remaining: JSON.parse(event.data).remaining_micros as number, at });
          },
        });
        const reader = response.body!.getReader();
        const decoder = new TextDecoder();
        void (async () => {
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) return;
              parser.feed(decoder.decode(value, { stream: true }));
            }
          } catch {
            // Aborted at the end.
          }
        })();
      }),
    );
    await Promise.all(opened);
    await new Promise((resolve) => setTimeout(resolve, 200));

    for (let i = 1; i <= DEBITS; i++) {
      const admitted = await metering.admit({ tenantId, appId: null, holdMicros: i });
      if (!admitted.ok) throw new Error('admission refused');
      const settled = await metering.settle({
        usageId: admitted.usageId,
        tenantId,
        appId: null,
        connectionId: null,
        keyId: null,
        provider: 'bench',
        model: null,
        quantities: { call: 1 },
        costMicros: i,
        estimated: false,
        upstreamStatus: 200,
        requestId: null,
        holdMicros: admitted.holdMicros,
        leaseId: admitted.leaseId,
      });
      committedAt.set(settled.balanceAfterMicros, performance.now());
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const expected = DEBITS * APPS * STREAMS_PER_APP;
    const deadline = Date.now() + 5000;
    const latencies: number[] = [];
    for (;;) {
      latencies.length = 0;
      for (const { remaining, at } of arrivals) {
        const committed = committedAt.get(remaining);
        if (committed !== undefined) latencies.push(Math.max(0, at - committed));
      }
      if (latencies.length >= expected || Date.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, 20));
    }

    const sorted = [...latencies].sort((a, b) => a - b);
    const at = (q: number) =>
      sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
    const p99 = at(0.99);
    const met = latencies.length === expected && p99 < TARGET_P99_MS;
    console.log(`\nCommitted debit to billing.balance_changed on ${APPS * STREAMS_PER_APP} open streams`);
    console.log(`  ${latencies.length} of ${expected} deliveries measured`);
    console.log(
      `  p50 ${at(0.5).toFixed(2)} ms   p99 ${p99.toFixed(2)} ms   max ${sorted.at(-1)?.toFixed(2)} ms`,
    );
    console.log(`  p99 target < ${TARGET_P99_MS} ms: ${met ? 'met' : 'MISSED'}`);
    return { ratio: p99, target: TARGET_P99_MS, metTarget: met };
  } finally {
    for (const abort of aborts) abort.abort();
    await server.close();
    await platform.close();
    await store.close();
  }
}
