import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import autocannon from 'autocannon';

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

export interface BenchOutcome {
  ratio: number;
  target: number;
  metTarget: boolean;
}

/** Seconds each measured run lasts (`BENCH_SECONDS`, default 5). */
export const BENCH_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** Subject and baseline take turns this many times, so a noisy moment hits both alike. */
const ROUNDS = 3;
const CONNECTIONS = 10;

/** Serves a fetch handler on a free loopback port until `close()`. */
export async function serveOnLoopback(
  fetch: (request: Request, env?: unknown) => Promise<Response> | Response,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Drives `url` with autocannon for `seconds` and reports throughput and latency. */
export async function load(url: string, headers: Record<string, string>, seconds = BENCH_SECONDS) {
  // The load comes from a worker thread, so the server under test has this thread to itself.
  const result = await autocannon({ url, headers, connections: CONNECTIONS, duration: seconds, workers: 1 });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  } satisfies LoadResult;
}

/**
 * Measures a subject and its baseline in alternating rounds (after a one-second warm-up of each)
 * and reports their summed throughput and the worst round's latencies.
 */
export async function compare(
  subject: { url: string; headers?: Record<string, string> },
  baseline: { url: string; headers?: Record<string, string> },
  seconds = BENCH_SECONDS,
): Promise<{ subject: LoadResult; baseline: LoadResult }> {
  await load(subject.url, subject.headers ?? {}, 1);
  await load(baseline.url, baseline.headers ?? {}, 1);
  const runs: { subject: LoadResult[]; baseline: LoadResult[] } = { subject: [], baseline: [] };
  for (let round = 0; round < ROUNDS; round++) {
    runs.subject.push(await load(subject.url, subject.headers ?? {}, seconds / ROUNDS));
    runs.baseline.push(await load(baseline.url, baseline.headers ?? {}, seconds / ROUNDS));
  }
  return { subject: combine(runs.subject), baseline: combine(runs.baseline) };
}

function combine(results: LoadResult[]): LoadResult {
  const sum = (pick: (r: LoadResult) => number) => results.reduce((total, r) => total + pick(r), 0);
  return {
    requestsPerSecond: sum((r) => r.requestsPerSecond) / results.length,
    p50Ms: Math.max(...results.map((r) => r.p50Ms)),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
  };
}

/** Prints a subject against its baseline, and whether the ratio meets the target. */
export function report(
  title: string,
  subject: LoadResult,
  baseline: LoadResult,
  target: number,
): BenchOutcome {
  const ratio = subject.requestsPerSecond / baseline.requestsPerSecond;
  const row = (name: string, r: LoadResult) =>
    `  ${name.padEnd(10)} ${r.requestsPerSecond.toFixed(0).padStart(8)} req/s   p50 ${r.p50Ms.toFixed(1).padStart(6)} ms   p99 ${r.p99Ms.toFixed(1).padStart(6)} ms   non-2xx ${r.non2xx}   errors ${r.errors}`;
  console.log(
    `\n${title} (${CONNECTIONS} connections, ${BENCH_SECONDS} s each in ${ROUNDS} alternating rounds)`,
  );
  console.log(row('subject', subject));
  console.log(row('baseline', baseline));
  const metTarget = ratio >= target && subject.non2xx === 0 && subject.errors === 0;
  console.log(
    `  ratio ${ratio.toFixed(2)} of baseline throughput (target >= ${target}): ${metTarget ? 'met' : 'MISSED'}`,
  );
  return { ratio, target, metTarget };
}
