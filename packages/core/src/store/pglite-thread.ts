import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { StoreUnavailableError } from './availability.js';

/** What the store asks of an embedded database: PGlite itself, or PGlite on a thread of its own. */
export interface EmbeddedDatabase {
  query<R>(sql: string, params?: unknown[]): Promise<EmbeddedResult<R>>;
  /** A script of statements by the simple protocol; one result per statement. */
  exec(sql: string): Promise<Array<EmbeddedResult<unknown>>>;
  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface EmbeddedResult<R> {
  rows: R[];
  affectedRows?: number;
}

/**
 * Settings of the engine's one session, made as it opens, inline or on its thread. A new WAL
 * segment (one per 16 MB of writes) is not filled with zeros before its first record: PGlite
 * writes the zeros through its file system a page at a time, which held the thread 5 to 8 ms on
 * disk and 20 to 60 ms in memory once a segment (docs/storage.md). The fill only reserves the
 * disk space ahead of the records; without it a full disk shows at a write instead.
 */
export const ENGINE_SETTINGS = 'set wal_init_zero = off';

/**
 * The thread's program, plain JavaScript so it runs the same from the sources, the build and a
 * host's bundle. Its value parsers are those of `int8.ts` (int8 exactly or not at all; dates and
 * numerics as text): functions do not cross threads, so they are written here again.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { PGlite } = require(workerData.pglite);
function parseInt8(text) {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError('int8 value ' + text + ' is outside the exactly representable range');
  return value;
}
const asText = (text) => text;
const db = new PGlite({
  ...(workerData.dataDir ? { dataDir: workerData.dataDir } : {}),
  parsers: { 20: parseInt8, 1082: asText, 1700: asText },
});
const stops = new Map();
const plain = (error) => {
  if (!(error instanceof Error)) return { message: String(error) };
  const out = { name: error.name, message: error.message };
  for (const [key, value] of Object.entries(error)) {
    if (value !== undefined && value !== null && typeof value !== 'object' && typeof value !== 'function') out[key] = value;
  }
  return out;
};
const result = (r) => ({ rows: r.rows, affectedRows: r.affectedRows });
const ops = {
  query: (m) => db.query(m.sql, m.params).then(result),
  exec: (m) => db.exec(m.sql).then((results) => results.map(result)),
  listen: async (m) => {
    if (!stops.has(m.channel)) {
      stops.set(m.channel, await db.listen(m.channel, (payload) => parentPort.postMessage({ channel: m.channel, payload })));
    }
  },
  unlisten: async (m) => {
    const stop = stops.get(m.channel);
    stops.delete(m.channel);
    if (stop) await stop();
  },
  close: () => db.close(),
};
db.waitReady.then(() => db.exec(${JSON.stringify(ENGINE_SETTINGS)})).then(
  () => {
    parentPort.on('message', (m) => {
      ops[m.op](m).then(
        (value) => parentPort.postMessage({ id: m.id, value }),
        (error) => parentPort.postMessage({ id: m.id, error: plain(error) }),
      );
    });
    parentPort.postMessage({ ready: true });
  },
  (error) => parentPort.postMessage({ ready: false, error: plain(error) }),
);
`;

type Reply = { id: number; value?: unknown; error?: Record<string, unknown> };
type Message =
  | Reply
  | { channel: string; payload: string }
  | { ready: boolean; error?: Record<string, unknown> };

/**
 * The embedded store on a thread of its own. PGlite is Postgres compiled to WebAssembly: every
 * statement runs to its end before its thread does anything else. In the platform's thread a
 * settlement batch would hold every request (and every chunk of every stream) for as long as it
 * runs; on its own thread the platform's requests go on while the store works, on another core.
 * Queries and their results cross as structured clones; errors as their message and fields
 * (`code`, `constraint`, ...), which is what the store's callers read of them.
 *
 * The thread keeps the process alive only while a query is in flight, as a socket would: a
 * store left open does not hold a finished process.
 *
 * @see docs/storage.md "The embedded store"
 */
export async function openPGliteThread(dataDir: string | undefined): Promise<EmbeddedDatabase> {
  const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { pglite, dataDir } });
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let nextId = 1;
  let stopped: Error | null = null;

  await new Promise<void>((resolve, reject) => {
    const onExit = () => reject(new StoreUnavailableError('The embedded store could not start'));
    worker.once('error', reject);
    worker.once('exit', onExit);
    worker.once('message', (message: Message) => {
      worker.off('error', reject);
      worker.off('exit', onExit);
      if ('ready' in message && message.ready) resolve();
      else {
        reject(errorOf('error' in message ? message.error : undefined));
        void worker.terminate();
      }
    });
  });
  worker.unref();

  const stop = (error: Error) => {
    stopped ??= error;
    for (const call of pending.values()) call.reject(stopped);
    pending.clear();
  };
  worker.on('error', (error) =>
    stop(new StoreUnavailableError('The embedded store stopped', { cause: error })),
  );
  worker.on('exit', () => stop(new StoreUnavailableError('The embedded store stopped')));
  worker.on('message', (message: Message) => {
    if ('channel' in message) {
      for (const handler of handlers.get(message.channel) ?? []) handler(message.payload);
      return;
    }
    if (!('id' in message)) return;
    const call = pending.get(message.id);
    if (!call) return;
    pending.delete(message.id);
    if (pending.size === 0) worker.unref();
    if (message.error) call.reject(errorOf(message.error));
    else call.resolve(message.value);
  });

  function ask<T>(op: string, fields: Record<string, unknown> = {}): Promise<T> {
    if (stopped) return Promise.reject(stopped);
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      if (pending.size === 1) worker.ref();
      worker.postMessage({ id, op, ...fields });
    });
  }

  return {
    query: <R>(sql: string, params: unknown[] = []) => ask<EmbeddedResult<R>>('query', { sql, params }),
    exec: (sql) => ask('exec', { sql }),
    async listen(channel, handler) {
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await ask('listen', { channel });
      }
      set.add(handler);
      return async () => {
        set.delete(handler);
        if (set.size > 0 || handlers.get(channel) !== set) return;
        handlers.delete(channel);
        if (!stopped) await ask('unlisten', { channel });
      };
    },
    async close() {
      if (stopped) return;
      try {
        await ask('close');
      } finally {
        stop(new StoreUnavailableError('The embedded store is closed'));
        await worker.terminate();
      }
    },
  };
}

/** An error of the thread, as its callers read it: message, name and Postgres fields. */
function errorOf(fields: Record<string, unknown> | undefined): Error {
  const { message, name, ...rest } = fields ?? {};
  const error =
    name === 'RangeError'
      ? new RangeError(String(message))
      : new Error(String(message ?? 'Embedded store error'));
  if (typeof name === 'string' && name !== 'RangeError') error.name = name;
  return Object.assign(error, rest);
}
