/**
 * `pnpm bench proxy`: a chat completion through the metered proxy (key, binding, credit hold,
 * forward, usage read, settlement) against pass-throughs that do no billing, each server in a
 * process of its own (`bench/support/proxy-servers.ts`), load from autocannon at 10 connections:
 *
 * - direct: straight to the stand-in upstream;
 * - raw: a `node:http` pass-through (keep-alive agent, bodies piped): what Node itself forwards;
 * - hono-fetch: a bare Hono route on the Node adapter that `fetch`es upstream;
 * - portkey: Portkey's open-source AI gateway (`@portkey-ai/gateway`), custom host = the upstream;
 * - metered (before): the platform's proxy through `platform.fetch` and a `fetch` upstream, the
 *   way every call went before the Node listener;
 * - metered (store inline): the same with the embedded store inline in the platform's thread;
 * - metered: the platform's proxy as `pnpm start` serves it (`nodeListener`, pooled upstream, the
 *   embedded store on a thread of its own) without the settlement journal, JSON and SSE;
 * - metered (journal): as `pnpm start` serves it, the store in a folder on disk and every answer
 *   waiting for its journal record to be on disk (reported beside the targets, not held to them).
 *
 * Then the multi-core figure, when the PostgreSQL server programs are installed: the platform in
 * cluster mode with 1 and 2 workers on one PostgreSQL store, and the statements it sent the
 * store per metered call.
 *
 * Targets: metered >= 5x metered (before) and >= 0.35 of raw; >= 4x portkey; added p50 over direct
 * (one call at a time) < 0.3 ms; p99 at 10 connections < 5 ms.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { POSTGRES_BIN, startPostgresCluster } from '../packages/core/test/support/pg-cluster.js';
import {
  BENCH_SECONDS,
  type BenchOutcome,
  type LoadResult,
  measure,
  sequentialLatency,
  type Target,
} from './support/measure.js';

const TARGETS = { overBefore: 5, ofRaw: 0.35, overPortkey: 4, addedP50Ms: 0.3, p99Ms: 5 };
const SERVERS = fileURLToPath(new URL('./support/proxy-servers.ts', import.meta.url));
const PORTKEY = fileURLToPath(
  new URL('../node_modules/@portkey-ai/gateway/build/start-server.js', import.meta.url),
);
const REQUEST = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Say hello.' }] });
const STREAM_REQUEST = JSON.stringify({
  model: 'bench-model',
  stream: true,
  messages: [{ role: 'user', content: 'Say hello.' }],
});
const PATH = '/v1/chat/completions';

interface Running {
  url: string;
  key?: string;
  child: ChildProcess;
  /** Sends `type` over IPC and resolves the reply of that type. */
  ask<T>(type: string): Promise<T>;
}

export async function proxyBenchmark(): Promise<BenchOutcome> {
  const started: ChildProcess[] = [];
  try {
    const upstream = await server(started, 'upstream');
    const raw = await server(started, 'raw', upstream.url);
    const honoFetch = await server(started, 'hono-fetch', upstream.url);
    const before = await server(started, 'metered', upstream.url, { serving: 'fetch' });
    const metered = await server(started, 'metered', upstream.url);
    const inline = await server(started, 'metered', upstream.url, { embedded: 'inline' });
    const journaled = await server(started, 'metered', upstream.url, { onDisk: true, journal: true });
    const portkey = await startPortkey(started).catch((error: Error) => error);

    const post = (url: string, headers: Record<string, string> = {}, body = REQUEST): Target => ({
      url,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    const bearer = (key = 'sk-bench') => ({ authorization: `Bearer ${key}` });
    const targets: Record<string, Target> = {
      direct: post(`${upstream.url}${PATH}`, bearer()),
      raw: post(`${raw.url}/proxy/bench-llm${PATH}`),
      'hono-fetch': post(`${honoFetch.url}/proxy/bench-llm${PATH}`),
      ...(portkey instanceof Error
        ? {}
        : {
            portkey: post(`${portkey}${PATH}`, {
              ...bearer(),
              'x-portkey-provider': 'openai',
              'x-portkey-custom-host': `${upstream.url}/v1`,
            }),
          }),
      'metered (before)': post(`${before.url}/proxy/bench-llm${PATH}`, bearer(before.key)),
      'metered (store inline)': post(`${inline.url}/proxy/bench-llm${PATH}`, bearer(inline.key)),
      metered: post(`${metered.url}/proxy/bench-llm${PATH}`, bearer(metered.key)),
      'metered (journal)': post(`${journaled.url}/proxy/bench-llm${PATH}`, bearer(journaled.key)),
      'direct SSE': post(`${upstream.url}${PATH}`, bearer(), STREAM_REQUEST),
      'raw SSE': post(`${raw.url}/proxy/bench-llm${PATH}`, {}, STREAM_REQUEST),
      'metered SSE': post(`${metered.url}/proxy/bench-llm${PATH}`, bearer(metered.key), STREAM_REQUEST),
    };
    const load = await measure(targets);
    const latency = await sequentialLatency({
      direct: targets.direct!,
      raw: targets.raw!,
      metered: targets.metered!,
      'metered (journal)': targets['metered (journal)']!,
    });
    const billedBefore = (await before.ask<{ billed: number }>('billed')).billed;
    const billed = (await metered.ask<{ billed: number }>('billed')).billed;

    console.log(
      `\nPOST ${PATH}: each server in its own process, ${BENCH_SECONDS} s each at 10 connections (autocannon), alternating rounds`,
    );
    console.log(
      `  ${'path'.padEnd(22)} ${'req/s'.padStart(8)}   ${'p50'.padStart(6)}   ${'p99'.padStart(6)}   non-2xx  errors`,
    );
    for (const [name, r] of Object.entries(load)) console.log(row(name, r));
    if (portkey instanceof Error) console.log(`  ${'portkey'.padEnd(22)} n/a: ${portkey.message}`);
    const one = (name: keyof typeof latency) =>
      `${name} p50 ${latency[name].p50Ms.toFixed(3)} ms p99 ${latency[name].p99Ms.toFixed(3)} ms`;
    console.log(
      `  one call at a time: ${one('direct')}; ${one('raw')}; ${one('metered')}; ${one('metered (journal)')}`,
    );
    console.log(`  metered calls billed: ${billed} (before: ${billedBefore})`);

    const rps = (name: string) => load[name]?.requestsPerSecond ?? Number.NaN;
    const clean = ['metered', 'metered SSE'].every(
      (name) => load[name]!.non2xx === 0 && load[name]!.errors === 0,
    );
    const checks: Array<[string, number, string, boolean]> = [];
    const ratio = (label: string, value: number, target: number) =>
      checks.push([label, value, `>= ${target}`, value >= target]);
    ratio('metered / metered (before)', rps('metered') / rps('metered (before)'), TARGETS.overBefore);
    ratio('metered / raw', rps('metered') / rps('raw'), TARGETS.ofRaw);
    ratio('metered SSE / raw SSE', rps('metered SSE') / rps('raw SSE'), TARGETS.ofRaw);
    if (!(portkey instanceof Error))
      ratio('metered / portkey', rps('metered') / rps('portkey'), TARGETS.overPortkey);
    const addedP50 = latency.metered.p50Ms - latency.direct.p50Ms;
    checks.push([
      'added p50 over direct (ms)',
      addedP50,
      `< ${TARGETS.addedP50Ms}`,
      addedP50 < TARGETS.addedP50Ms,
    ]);
    const p99 = load.metered!.p99Ms;
    checks.push(['metered p99 at 10 connections (ms)', p99, `< ${TARGETS.p99Ms}`, p99 < TARGETS.p99Ms]);
    checks.push(['metered answers all 2xx', clean ? 1 : 0, '= 1', clean]);
    for (const [label, value, target, met] of checks) {
      console.log(
        `  ${label.padEnd(36)} ${value.toFixed(3).padStart(7)}  (target ${target}): ${met ? 'met' : 'MISSED'}`,
      );
    }

    // The cluster runs alone with the upstream: the other servers go first.
    for (const child of started) if (child !== upstream.child) child.kill('SIGTERM');
    const multiCore = await clusterFigure(started, upstream.url);
    return {
      ratio: rps('metered') / rps('metered (before)'),
      target: TARGETS.overBefore,
      metTarget: checks.every(([, , , met]) => met) && multiCore,
    };
  } finally {
    for (const child of started) child.kill('SIGTERM');
  }
}

/**
 * The platform in cluster mode on one PostgreSQL store: 1 and 2 workers, and the statements sent
 * to the store per metered call (everything the workers sent during the run, heartbeats and lease
 * renewals included, over the calls billed in it). Reported, not a target: false only on errors.
 */
async function clusterFigure(started: ChildProcess[], upstreamUrl: string): Promise<boolean> {
  if (!POSTGRES_BIN) {
    console.log('\n  cluster mode: n/a (no PostgreSQL server programs installed)');
    return true;
  }
  console.log('\nThe platform in cluster mode on one PostgreSQL store (Node listener, 10 connections)');
  const results: Record<number, number> = {};
  let clean = true;
  for (const workers of [1, 2]) {
    const cluster = await startPostgresCluster();
    try {
      const platform = await server(started, 'metered', upstreamUrl, { workers, databaseUrl: cluster.url });
      const target: Target = {
        url: `${platform.url}/proxy/bench-llm${PATH}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${platform.key}` },
        body: REQUEST,
      };
      const counted = () => platform.ask<{ statements: number; billed: number }>('statements');
      await measure({ warm: target }, 1);
      const start = await counted();
      const { warm: r } = await measure({ warm: target });
      const end = await counted();
      const calls = end.billed - start.billed;
      results[workers] = r.requestsPerSecond;
      clean &&= r.non2xx === 0 && r.errors === 0;
      console.log(
        `${row(`${workers} worker${workers > 1 ? 's' : ''}`, r)}   ${(end.statements / Math.max(1, calls)).toFixed(3)} statements per call (${end.statements} for ${calls} calls)`,
      );
      platform.child.kill('SIGTERM');
      await new Promise((resolve) => platform.child.once('exit', resolve));
    } finally {
      await cluster.dispose();
    }
  }
  console.log(`  scaling 2 workers / 1 worker: ${(results[2]! / results[1]!).toFixed(2)}`);
  return clean;
}

function row(name: string, r: LoadResult): string {
  return `  ${name.padEnd(22)} ${r.requestsPerSecond.toFixed(0).padStart(8)}   ${r.p50Ms.toFixed(0).padStart(4)} ms   ${r.p99Ms.toFixed(0).padStart(3)} ms   ${String(r.non2xx).padStart(7)}  ${String(r.errors).padStart(6)}`;
}

/** Starts a server role in a process of its own and waits for its `ready`. */
async function server(
  started: ChildProcess[],
  role: string,
  upstreamUrl = '',
  options: object = {},
): Promise<Running> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', SERVERS, role, upstreamUrl, JSON.stringify(options)],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  started.push(child);
  const ready = await new Promise<{ url: string; key?: string }>((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`bench server ${role} exited (${code})`)));
  });
  return {
    ...ready,
    child,
    ask: <T>(type: string) =>
      new Promise<T>((resolve) => {
        const onMessage = (message: { type: string }) => {
          if (message.type !== type) return;
          child.off('message', onMessage);
          resolve(message as T);
        };
        child.on('message', onMessage);
        child.send({ type });
      }),
  };
}

/** Portkey's gateway as its package runs it (`start-server.js --port --headless`); its URL once it answers. */
async function startPortkey(started: ChildProcess[]): Promise<string> {
  const port = await freePort();
  const child = spawn(process.execPath, [PORTKEY, `--port=${port}`, '--headless'], { stdio: 'ignore' });
  started.push(child);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode})`);
    const answered = await fetch(`${url}/`).then(
      () => true,
      () => false,
    );
    if (answered) return url;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the gateway did not answer within 20 s');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
