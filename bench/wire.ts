/**
 * `pnpm bench wire`, two measurements:
 *
 * 1. Time to the first text delta of a turn through the wire — via `service.fetch`, via a real
 *    Express server on loopback and (for scale) via Hono's own Node server — against the same mock model streamed directly through the AI
 *    SDK, in one run: p50/p99 of the added latency. Target: under 5 ms p50 (via fetch).
 * 2. Express-adapter throughput on a small JSON route of the wire (`GET /doctor/base-url`)
 *    against the same route on Hono's own Node server. Target: at least 0.8. Measured for
 *    `withService()` (wire requests answered before Express); `mountService()` inside Express's
 *    router is printed beside it with plain Express for scale.
 */
import { createServer } from 'node:http';
import { Worker } from 'node:worker_threads';
import { silentLogger } from '@service/core/http';
import { createStore } from '@service/core/store';
import { createService } from '@service/core/wire';
import { mountService, withService } from '@service/express';
import { simulateReadableStream, streamText, type UIMessageChunk } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import express from 'express';
import { type BenchOutcome, measure, report, serveOnLoopback } from './support/measure.js';

const LATENCY_TARGET_MS = 5;
const THROUGHPUT_TARGET = 0.8;
const TURNS = Number(process.env.BENCH_TURNS ?? 300);

const mockModel = () =>
  new MockLanguageModelV3({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: 'stream-start' as const, warnings: [] },
          { type: 'text-start' as const, id: 't' },
          ...Array.from({ length: 8 }, (_, i) => ({
            type: 'text-delta' as const,
            id: 't',
            delta: `word${i} `,
          })),
          { type: 'text-end' as const, id: 't' },
          {
            type: 'finish' as const,
            finishReason: { unified: 'stop' as const, raw: undefined },
            usage: {
              inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
              outputTokens: { total: 8, text: 8, reasoning: undefined },
            },
          },
        ],
        initialDelayInMs: null,
        chunkDelayInMs: null,
      }),
    }),
  });

/** Reads an SSE body until its first text delta; returns the elapsed ms, then drains the rest. */
async function firstDelta(started: number, response: Response): Promise<number> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let at = -1;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (at < 0 && text.includes('"type":"text-delta"')) at = performance.now() - started;
  }
  if (at < 0) throw new Error(`no text delta in the turn (status ${response.status})`);
  return at;
}

async function directFirstDelta(): Promise<number> {
  const started = performance.now();
  const stream = streamText({ model: mockModel(), prompt: 'hi' }).toUIMessageStream();
  let at = -1;
  for await (const chunk of stream as AsyncIterable<UIMessageChunk>) {
    if (at < 0 && chunk.type === 'text-delta') at = performance.now() - started;
  }
  return at;
}

/**
 * Time to the first text delta over HTTP, measured from a worker thread: a client sharing the
 * server's thread would wait on the server's own work (the embedded store runs on that thread)
 * and charge it to the network. Targets take turns, `count` turns each after a warm-up.
 */
function httpFirstDeltas(
  urls: Record<string, string>,
  body: string,
  count: number,
): Promise<Record<string, number[]>> {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    (async () => {
      const { urls, body, count } = workerData;
      const out = Object.fromEntries(Object.keys(urls).map((k) => [k, []]));
      for (let i = 0; i < count + 20; i++) {
        for (const [name, url] of Object.entries(urls)) {
          const started = performance.now();
          const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
          const reader = response.body.getReader();
          const decoder = new TextDecoder();
          let text = '';
          let at = -1;
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            text += decoder.decode(value, { stream: true });
            if (at < 0 && text.includes('"type":"text-delta"')) at = performance.now() - started;
          }
          if (at < 0) throw new Error('no text delta from ' + name + ' (status ' + response.status + ')');
          if (i >= 20) out[name].push(at);
        }
      }
      parentPort.postMessage(out);
    })().catch((error) => parentPort.postMessage({ error: String(error) }));
  `;
  return new Promise((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData: { urls, body, count } });
    worker.once('message', (message: Record<string, number[]> & { error?: string }) => {
      void worker.terminate();
      if (message.error) reject(new Error(message.error));
      else resolve(message);
    });
    worker.once('error', reject);
  });
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

export async function wireBenchmark(): Promise<BenchOutcome> {
  const store = await createStore({ url: 'memory://' });
  const service = await createService({
    store,
    principal: () => ({ subject: 'bench-user' }),
    model: mockModel(),
    logger: silentLogger,
    env: {},
    development: false,
  });
  const app = express();
  mountService(app, service);
  app.get('/plain', (_req, res) => {
    res.json({ set: false });
  });
  const expressServer = await new Promise<ReturnType<typeof app.listen>>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const expressUrl = `http://127.0.0.1:${(expressServer.address() as { port: number }).port}`;
  // The fast path: the same kind of Express app, wire requests answered before Express sees them.
  const fastServer = createServer(withService(express(), service));
  await new Promise<void>((resolve) => fastServer.listen(0, '127.0.0.1', resolve));
  const fastUrl = `http://127.0.0.1:${(fastServer.address() as { port: number }).port}`;
  const honoServer = await serveOnLoopback((request) => service.fetch(request));
  const turn = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"message":"hi"}' };
  try {
    const samples: Record<'direct' | 'fetch' | 'hono' | 'express' | 'mounted', number[]> = {
      direct: [],
      fetch: [],
      hono: [],
      express: [],
      mounted: [],
    };
    for (let i = 0; i < TURNS + 20; i++) {
      const direct = await directFirstDelta();
      const started = performance.now();
      const viaFetch = await firstDelta(
        started,
        await service.fetch(new Request('http://bench/api/service/chat', turn)),
      );
      if (i < 20) continue; // warm-up
      samples.direct.push(direct);
      samples.fetch.push(viaFetch);
    }
    const overHttp = await httpFirstDeltas(
      {
        hono: `${honoServer.url}/api/service/chat`,
        express: `${fastUrl}/api/service/chat`,
        mounted: `${expressUrl}/api/service/chat`,
      },
      turn.body,
      TURNS,
    );
    samples.hono = overHttp.hono ?? [];
    samples.express = overHttp.express ?? [];
    samples.mounted = overHttp.mounted ?? [];
    const p = (name: keyof typeof samples, q: number) => quantile(samples[name], q);
    const added = (name: 'fetch' | 'express' | 'mounted', q: number) => p(name, q) - p('direct', q);
    console.log(
      `\nTime to the first text delta (${TURNS} turns each; a new thread per turn; HTTP clients in a worker thread)`,
    );
    const labels = {
      direct: 'model streamed directly',
      fetch: 'service.fetch',
      hono: "Hono's Node server",
      express: 'Express withService()',
      mounted: 'Express mountService()',
    };
    for (const name of ['direct', 'fetch', 'hono', 'express', 'mounted'] as const) {
      console.log(
        `  ${labels[name].padEnd(24)} p50 ${p(name, 0.5).toFixed(2).padStart(7)} ms   p99 ${p(name, 0.99).toFixed(2).padStart(7)} ms`,
      );
    }
    const latencyMet = added('fetch', 0.5) < LATENCY_TARGET_MS;
    console.log(
      `  added by the wire via fetch:   p50 ${added('fetch', 0.5).toFixed(2)} ms   p99 ${added('fetch', 0.99).toFixed(2)} ms (target p50 < ${LATENCY_TARGET_MS} ms): ${latencyMet ? 'met' : 'MISSED'}`,
    );
    console.log(
      `  added via Express withService(): p50 ${added('express', 0.5).toFixed(2)} ms   p99 ${added('express', 0.99).toFixed(2)} ms; mountService(): p50 ${added('mounted', 0.5).toFixed(2)} ms (both include the loopback HTTP round trip)`,
    );
    console.log(
      `  the Express adapter's own share (withService - Hono's server, same wire over HTTP): p50 ${(p('express', 0.5) - p('hono', 0.5)).toFixed(2)} ms`,
    );

    const route = '/api/service/doctor/base-url';
    const loads = await measure({
      fastPath: { url: `${fastUrl}${route}` },
      hono: { url: `${honoServer.url}${route}` },
      mounted: { url: `${expressUrl}${route}` },
      plainExpress: { url: `${expressUrl}/plain` },
    });
    const throughput = report(
      `GET ${route} through @service/express withService() vs Hono's own Node server`,
      loads.fastPath,
      loads.hono,
      THROUGHPUT_TARGET,
    );
    const of = (a: number, b: number) => (a / b).toFixed(2);
    // Inside Express's router, Express's own per-request work bounds any adapter: for scale, the
    // same JSON answered by `res.json()`.
    console.log(
      `  mountService() inside Express's router: ${loads.mounted.requestsPerSecond.toFixed(0)} req/s (${of(loads.mounted.requestsPerSecond, loads.hono.requestsPerSecond)} of Hono's); plain Express res.json(): ${loads.plainExpress.requestsPerSecond.toFixed(0)} req/s (${of(loads.plainExpress.requestsPerSecond, loads.hono.requestsPerSecond)}); mountService is at ${of(loads.mounted.requestsPerSecond, loads.plainExpress.requestsPerSecond)} of plain Express`,
    );
    return { ...throughput, metTarget: throughput.metTarget && latencyMet };
  } finally {
    expressServer.closeAllConnections();
    await new Promise((resolve) => expressServer.close(resolve));
    fastServer.closeAllConnections();
    await new Promise((resolve) => fastServer.close(resolve));
    await honoServer.close();
    await service.close();
    await store.close();
  }
}
