/**
 * The servers `pnpm bench proxy` drives, each started in a process of its own:
 * `node --import tsx bench/support/proxy-servers.ts <role> [upstream-url] [options as JSON]`.
 * Each listens on a free loopback port and sends `{ url, ... }` over IPC once ready.
 *
 * - `upstream`: the stand-in OpenAI-compatible upstream (a fixed completion, JSON or SSE).
 * - `raw`: a `node:http` pass-through (keep-alive agent, body piped both ways): Node's own limit.
 * - `hono-fetch`: a bare Hono route on `@hono/node-server` that `fetch`es the upstream.
 * - `metered`: the platform's metered proxy, served as `pnpm start` serves it (`nodeListener`);
 *   `{ "serving": "fetch" }` serves `platform.fetch` with a `fetch` upstream instead (the way
 *   every call went before the Node listener); `{ "workers": N, "databaseUrl": ... }` runs N
 *   cluster workers on one PostgreSQL store and counts the statements they send it.
 */
import cluster from 'node:cluster';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, request, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { post } from '@service/core/billing';
import { createConnection } from '@service/core/connections';
import { silentLogger } from '@service/core/http';
import { ensureAccount } from '@service/core/identity';
import { createPlatform } from '@service/core/platform';
import { upsertProvider } from '@service/core/proxy';
import { createStore, generateEncryptionKey, type Store } from '@service/core/store';
import { Hono } from 'hono';

export const COMPLETION = JSON.stringify({
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

const chunk = (delta: object, extra: object = {}) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', model: 'bench-model', choices: [{ index: 0, delta }], ...extra })}\n\n`;
/** A streamed completion as OpenAI sends it with `include_usage`: deltas, then the usage chunk. */
export const STREAMED = [
  chunk({ role: 'assistant', content: 'Hello' }),
  chunk({ content: ' from the bench' }),
  chunk({ content: ' upstream.' }),
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 } })}\n\n`,
  'data: [DONE]\n\n',
].join('');

/** The managed-pool credential the metered proxy sends upstream (the stand-in takes any). */
const POOL_CREDENTIAL = 'sk-bench-pool';
/** Enough credit that no run comes near it. */
const CREDIT_MICROS = 1_000_000_000_000;

function upstream(): Server {
  return createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (part: string) => {
      body += part;
    });
    req.on('end', () => {
      if (body.includes('"stream":true')) {
        res
          .writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
          .end(STREAMED);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(COMPLETION);
      }
    });
  });
}

/** Forwards every request to the upstream over a keep-alive agent, bodies piped both ways. */
function rawPassThrough(upstreamUrl: string): Server {
  const target = new URL(upstreamUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  return createServer((req, res) => {
    const path = (req.url ?? '/').replace(/^\/proxy\/[^/]+/, '');
    const out = request(
      {
        host: target.hostname,
        port: target.port,
        path,
        method: req.method,
        agent,
        headers: {
          'content-type': req.headers['content-type'] ?? '',
          authorization: `Bearer ${POOL_CREDENTIAL}`,
        },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
}

/** The same stack as the platform's routes without auth or billing: Hono, the Node adapter, fetch. */
function honoFetch(upstreamUrl: string) {
  return new Hono().all('/proxy/:provider/*', async (c) => {
    const path = new URL(c.req.url).pathname.replace(/^\/proxy\/[^/]+/, '');
    const response = await fetch(`${upstreamUrl}${path}`, {
      method: c.req.method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${POOL_CREDENTIAL}` },
      body: await c.req.text(),
    });
    return new Response(response.body, { status: response.status, headers: response.headers });
  });
}

/** A folder of this process's own, removed when it exits. */
function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A provider over the upstream, a tenant with an app bound to it and credit, and its key. */
async function seed(store: Store, upstreamUrl: string, sealer: Parameters<typeof upsertProvider>[1]) {
  const { db } = store;
  await db.insertInto('integrations').values({ provider: 'bench-llm', name: 'Bench LLM' }).execute();
  await upsertProvider(db, sealer, {
    slug: 'bench-llm',
    upstreamUrl,
    dialect: 'openai',
    credential: POOL_CREDENTIAL,
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
  return { tenantId, appId: app.id };
}

interface MeteredOptions {
  serving?: 'node' | 'fetch';
  /** Where the embedded store runs (default: the store's own default, its own thread). */
  embedded?: 'thread' | 'inline';
  /** The store in a folder on disk (as `pnpm start` keeps it) instead of in memory. */
  onDisk?: boolean;
  /** Keep the settlement journal (as `pnpm start` does): each answer waits for its record to be on disk. */
  journal?: boolean;
  workers?: number;
  databaseUrl?: string;
  /** Set by the primary for its workers: the key the provider's credential is sealed with, the port. */
  encryptionKey?: string;
  port?: number;
}

async function meteredPlatform(store: Store, options: MeteredOptions) {
  return createPlatform({
    store,
    env: {},
    logger: silentLogger,
    encryptionKey: options.encryptionKey ?? generateEncryptionKey(),
    ...(options.serving === 'fetch' ? { upstreamFetch: fetch } : {}),
    ...(options.journal ? { journalDir: scratchDir('bench-journal-') } : {}),
  });
}

/** One process: its own embedded store, seeded, serving the platform. */
async function metered(upstreamUrl: string, options: MeteredOptions) {
  const store = await createStore({
    // The folder's lock file goes beside it, in the scratch folder too.
    ...(options.onDisk ? { dataDir: join(scratchDir('bench-store-'), 'data') } : { url: 'memory://' }),
    ...(options.embedded ? { embedded: options.embedded } : {}),
  });
  const platform = await meteredPlatform(store, options);
  const { tenantId, appId } = await seed(store, upstreamUrl, platform.context.sealer);
  const { keys, sealer } = platform.context;
  await createConnection({ db: store.db, sealer, keys }, { tenantId, provider: 'bench-llm', appId });
  await post(store.db, { tenantId, amountMicros: CREDIT_MICROS, kind: 'grant', idempotencyKey: 'bench' });
  const { key } = await keys.issue({ tenantId, kind: 'app', appId });
  const server =
    options.serving === 'fetch'
      ? await new Promise<Server>((resolve) => {
          const s = serve({ fetch: platform.fetch, port: 0, hostname: '127.0.0.1' }, () =>
            resolve(s as Server),
          );
        })
      : await listen(createServer(platform.nodeListener));
  const billed = async () => {
    await platform.context.metering.settled();
    const row = await store.db
      .selectFrom('usage_events')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };
  process.on('message', async (message: { type: string }) => {
    if (message.type === 'billed') process.send!({ type: 'billed', billed: await billed() });
  });
  return { url: urlOf(server), key };
}

/**
 * The platform in cluster mode: the primary seeds the PostgreSQL store, each worker opens its own
 * pool on it and serves the platform on the shared port, counting the statements it sends. Asked
 * `statements`, the primary answers the workers' count since the last ask and the calls billed.
 */
async function meteredCluster(upstreamUrl: string, options: MeteredOptions & { databaseUrl: string }) {
  if (cluster.isWorker) return meteredWorker(options.databaseUrl, options);
  const encryptionKey = generateEncryptionKey();
  const store = await createStore({ url: options.databaseUrl });
  const platform = await meteredPlatform(store, { ...options, encryptionKey });
  const { tenantId, appId } = await seed(store, upstreamUrl, platform.context.sealer);
  const { keys, sealer } = platform.context;
  await createConnection({ db: store.db, sealer, keys }, { tenantId, provider: 'bench-llm', appId });
  await post(store.db, { tenantId, amountMicros: CREDIT_MICROS, kind: 'grant', idempotencyKey: 'bench' });
  const { key } = await keys.issue({ tenantId, kind: 'app', appId });
  await platform.close();
  const port = await freePort();
  const workerOptions: MeteredOptions = { ...options, encryptionKey, port };
  const forks = Array.from({ length: options.workers ?? 1 }, () =>
    cluster.fork({ BENCH_ARGS: JSON.stringify(['metered', upstreamUrl, JSON.stringify(workerOptions)]) }),
  );
  await Promise.all(forks.map((worker) => new Promise((resolve) => worker.once('message', resolve))));
  const ask = (worker: (typeof forks)[number]) =>
    new Promise<number>((resolve) => {
      worker.once('message', (reply: { statements: number }) => resolve(reply.statements));
      worker.send({ type: 'statements' });
    });
  process.on('message', async (message: { type: string }) => {
    if (message.type !== 'statements') return;
    const counts = await Promise.all(forks.map(ask));
    const row = await store.db
      .selectFrom('usage_events')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    process.send!({
      type: 'statements',
      statements: counts.reduce((sum, n) => sum + n, 0),
      billed: Number(row.n),
    });
  });
  return { url: `http://127.0.0.1:${port}`, key };
}

async function meteredWorker(databaseUrl: string, options: MeteredOptions): Promise<null> {
  let statements = 0;
  countStatements(() => {
    statements++;
  });
  const store = await createStore({ url: databaseUrl });
  const platform = await meteredPlatform(store, options);
  await listen(createServer(platform.nodeListener), options.port);
  process.on('message', async (message: { type: string }) => {
    if (message.type !== 'statements') return;
    // What this worker answered is settled in the store first, so its statements are counted.
    await platform.context.metering.settled();
    process.send!({ statements });
    statements = 0;
  });
  process.send!({ type: 'ready' });
  return null;
}

/** Counts each statement a `pg` client sends (the pool's clients are `pg.Client`s). */
function countStatements(count: () => void): void {
  const pg = createRequire(new URL('../../packages/core/package.json', import.meta.url))('pg') as {
    Client: { prototype: { query: (...args: unknown[]) => unknown } };
  };
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: unknown, ...args: unknown[]) {
    count();
    return query.apply(this, args);
  };
}

function listen(server: Server, port = 0): Promise<Server> {
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

function urlOf(server: Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function freePort(): Promise<number> {
  const server = await listen(createServer());
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function main(): Promise<void> {
  const args = cluster.isPrimary ? process.argv.slice(2) : (JSON.parse(process.env.BENCH_ARGS!) as string[]);
  const [role, upstreamUrl = '', json = '{}'] = args;
  const options = JSON.parse(json) as MeteredOptions;
  let ready: { url: string; key?: string } | null;
  switch (role) {
    case 'upstream':
      ready = { url: urlOf(await listen(upstream())) };
      break;
    case 'raw':
      ready = { url: urlOf(await listen(rawPassThrough(upstreamUrl))) };
      break;
    case 'hono-fetch':
      ready = await new Promise((resolve) => {
        const s = serve({ fetch: honoFetch(upstreamUrl).fetch, port: 0, hostname: '127.0.0.1' }, () =>
          resolve({ url: urlOf(s as Server) }),
        );
      });
      break;
    case 'metered':
      ready = options.databaseUrl
        ? await meteredCluster(upstreamUrl, { ...options, databaseUrl: options.databaseUrl })
        : await metered(upstreamUrl, options);
      break;
    default:
      throw new Error(`Unknown role ${role}`);
  }
  if (ready) process.send!({ type: 'ready', ...ready });
}

// Stopped by the bench: exit at once (profilers write their output on exit).
process.once('SIGTERM', () => process.exit(0));
await main();
