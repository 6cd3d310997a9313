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

/** What a benchmark drives: a URL and the request to send it. */
export interface Target {
  url: string;
  headers?: Record<string, string>;
  method?: string;
  body?: string;
}

/** Drives a target with autocannon for `seconds` and reports throughput and latency. */
export async function load(target: Target, seconds = BENCH_SECONDS): Promise<LoadResult> {
  // The load comes from a worker thread, so the server under test has this thread to itself.
  const result = await autocannon({
    url: target.url,
    headers: target.headers ?? {},
    ...(target.method ? { method: target.method as 'GET' } : {}),
    ...(target.body !== undefined ? { body: target.body } : {}),
    connections: CONNECTIONS,
    duration: seconds,
    workers: 1,
  });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/**
 * Measures targets in alternating rounds (after a one-second warm-up of each) and reports each
 * one's mean throughput and its worst round's latencies.
 */
export async function measure<K extends string>(
  targets: Record<K, Target>,
  seconds = BENCH_SECONDS,
): Promise<Record<K, LoadResult>> {
  const names = Object.keys(targets) as K[];
  for (const name of names) await load(targets[name], 1);
  const runs = Object.fromEntries(names.map((name) => [name, [] as LoadResult[]])) as Record<K, LoadResult[]>;
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of names) runs[name].push(await load(targets[name], seconds / ROUNDS));
  }
  return Object.fromEntries(names.map((name) => [name, combine(runs[name])])) as Record<K, LoadResult>;
}

/** A subject and its baseline, measured as `measure` does. */
export async function compare(
  subject: Target,
  baseline: Target,
  seconds = BENCH_SECONDS,
): Promise<{ subject: LoadResult; baseline: LoadResult }> {
  return measure({ subject, baseline }, seconds);
}

/**
 * Latency of one request at a time, in milliseconds with sub-millisecond precision (autocannon
 * rounds to whole ms): `count` requests per target, the targets taking turns.
 */
export async function sequentialLatency<K extends string>(
  targets: Record<K, Target>,
  count = 400,
): Promise<Record<K, { p50Ms: number; p99Ms: number }>> {
  const names = Object.keys(targets) as K[];
  const samples = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<K, number[]>;
  for (let i = 0; i < count + 20; i++) {
    for (const name of names) {
      const target = targets[name];
      const started = performance.now();
      const response = await fetch(target.url, {
        method: target.method ?? 'GET',
        headers: target.headers ?? {},
        ...(target.body !== undefined ? { body: target.body } : {}),
      });
      await response.arrayBuffer();
      if (i >= 20) samples[name].push(performance.now() - started);
    }
  }
  const quantile = (values: number[], q: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  };
  return Object.fromEntries(
    names.map((name) => [
      name,
      { p50Ms: quantile(samples[name], 0.5), p99Ms: quantile(samples[name], 0.99) },
    ]),
  ) as Record<K, { p50Ms: number; p99Ms: number }>;
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
