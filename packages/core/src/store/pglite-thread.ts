import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { Mutex, type messages, protocol, types } from '@electric-sql/pglite';
import { StoreUnavailableError } from './availability.js';
import { STORE_PARSERS } from './int8.js';
import { ENGINE_SETTINGS, PreparedPGlite, type ProtocolEngine } from './pglite-prepared.js';

/** An array type and its element's, as PGlite reads them to serialize and parse arrays. */
type ArrayType = { oid: number; typarray: number };

/** The array types of the engine, asked as PGlite asks them when it opens. */
const ARRAY_TYPES = `select b.oid, b.typarray from pg_catalog.pg_type a
  left join pg_catalog.pg_type b on b.oid = a.typelem
  where a.typcategory = 'A' group by b.oid, b.typarray order by b.oid`;

/**
 * The thread's program, plain JavaScript so it runs the same from the sources, the build and a
 * host's bundle. It hands back the engine's answers as bytes; their rows are read in the
 * platform's thread, with the store's parsers (`int8.ts`), so the thread needs none of its own.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { PGlite } = require(workerData.pglite);
const db = new PGlite(workerData.dataDir ? { dataDir: workerData.dataDir } : {});
const stops = new Map();
const plain = (error) => {
  if (!(error instanceof Error)) return { message: String(error) };
  const out = { name: error.name, message: error.message };
  for (const [key, value] of Object.entries(error)) {
    if (value !== undefined && value !== null && typeof value !== 'object' && typeof value !== 'function') out[key] = value;
  }
  return out;
};
const ops = {
  protocol: (m) => db._runExclusiveQuery(() => db.execProtocol(m.message)).then(({ data }) => data),
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
const reply = (m, fields) => {
  // The protocol's answer crosses as its bytes, moved rather than copied.
  const transfer = fields.value instanceof Uint8Array ? [fields.value.buffer] : [];
  const inTransaction = m.op === 'close' ? undefined : db.isInTransaction();
  parentPort.postMessage({ id: m.id, inTransaction, ...fields }, transfer);
};
db.waitReady
  .then(() => db.exec(${JSON.stringify(ENGINE_SETTINGS)}))
  .then(() => db.query(${JSON.stringify(ARRAY_TYPES)}))
  .then(
  ({ rows }) => {
    parentPort.on('message', (m) => {
      ops[m.op](m).then(
        (value) => reply(m, { value }),
        (error) => reply(m, { error: plain(error) }),
      );
    });
    parentPort.postMessage({ ready: true, arrayTypes: rows });
  },
  (error) => parentPort.postMessage({ ready: false, error: plain(error) }),
);
`;

type Reply = { id: number; value?: unknown; error?: Record<string, unknown>; inTransaction?: boolean };
type Message =
  | Reply
  | { channel: string; payload: string }
  | { ready: boolean; arrayTypes?: ArrayType[]; error?: Record<string, unknown> };

/** A thread of the engine, open and ready for statements. */
interface StartedThread {
  worker: Worker;
  arrayTypes: ArrayType[];
}

async function startThread(pglite: string, dataDir: string | undefined): Promise<StartedThread> {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { pglite, dataDir } });
  const arrayTypes = await new Promise<ArrayType[]>((resolve, reject) => {
    const onExit = () => reject(new StoreUnavailableError('The embedded store could not start'));
    worker.once('error', reject);
    worker.once('exit', onExit);
    worker.once('message', (message: Message) => {
      worker.off('error', reject);
      worker.off('exit', onExit);
      if ('ready' in message && message.ready) resolve(message.arrayTypes ?? []);
      else {
        // Ended before the caller hears of it: it may fall back to opening the same folder inline.
        const error = errorOf('error' in message ? message.error : undefined);
        void worker.terminate().finally(() => reject(error));
      }
    });
  });
  worker.unref();
  return { worker, arrayTypes };
}

export interface PGliteThreadOptions {
  /**
   * How long after its thread stopped an embedded store on a folder starts it again (doubled
   * after each start that fails, up to 30 s). 1 s by default.
   */
  restartAfterMs?: number;
}

/** The thread's side of the engine: which thread runs it now (tests stop it to see it come back). */
export interface ThreadEngine extends ProtocolEngine {
  readonly thread: Worker;
}

/**
 * The embedded store on a thread of its own. PGlite is Postgres compiled to WebAssembly: every
 * statement runs to its end before its thread does anything else. In the platform's thread a
 * settlement batch would hold every request (and every chunk of every stream) for as long as it
 * runs; on its own thread the platform's requests go on while the store works, on another core.
 *
 * Statements and scripts run as inline (`PreparedPGlite`: each text parsed once, each run one
 * trip): the protocol's bytes cross to the thread and its answer's bytes back, moved rather than
 * copied, and are read in this thread by PGlite's parsers. Errors cross as their message and
 * fields (`code`, `constraint`, ...), which is what the store's callers read of them.
 *
 * If the thread stops (the engine aborts), the statements under way fail as the store being
 * unreachable, and so does every later one until a new thread has opened the same folder, as a
 * Postgres server recovers from a crash: its channels are listened to again, and a transaction
 * that was open fails to its end (`PreparedPGlite`). A store in memory has nothing to come back
 * to and stays unreachable.
 *
 * The thread keeps the process alive only while a statement is in flight, as a socket would: a
 * store left open does not hold a finished process.
 *
 * @see docs/storage.md "The embedded store"
 */
export async function openPGliteThread(
  dataDir: string | undefined,
  options: PGliteThreadOptions = {},
): Promise<PreparedPGlite> {
  const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const first = await startThread(pglite, dataDir);
  let worker = first.worker;
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  const subscriptions = new Map<
    string,
    { handlers: Set<(payload: string | null) => void>; started: Promise<void> }
  >();
  let nextId = 1;
  /** Set once closed, or once a store in memory lost its thread: for good. */
  let stopped: Error | null = null;
  /** Set while the thread is being started again. */
  let restarting: Error | null = null;
  let restarts = 0;
  let inTransaction = false;

  const failPending = (error: Error) => {
    for (const call of pending.values()) call.reject(error);
    pending.clear();
  };
  const onMessage = (message: Message) => {
    if ('channel' in message) {
      for (const handler of subscriptions.get(message.channel)?.handlers ?? []) handler(message.payload);
      return;
    }
    if (!('id' in message)) return;
    const call = pending.get(message.id);
    if (!call) return;
    pending.delete(message.id);
    if (pending.size === 0) worker.unref();
    if (message.inTransaction !== undefined) inTransaction = message.inTransaction;
    if (message.error) call.reject(errorOf(message.error));
    else call.resolve(message.value);
  };
  /** The thread `lost` ended (an error and its exit both say so; only the first counts). */
  const onLost = (lost: Worker, error: Error) => {
    if (lost !== worker || stopped || restarting) return;
    failPending(error);
    if (dataDir === undefined) stopped = error;
    else {
      restarting = error;
      restartAfter(options.restartAfterMs ?? RESTART_AFTER_MS);
    }
  };
  const attach = (thread: Worker) => {
    thread.on('message', onMessage);
    thread.on('error', (error) =>
      onLost(thread, new StoreUnavailableError('The embedded store stopped', { cause: error })),
    );
    thread.on('exit', () => onLost(thread, new StoreUnavailableError('The embedded store stopped')));
  };
  const restartAfter = (delayMs: number) => {
    const timer = setTimeout(async () => {
      if (stopped) return;
      let next: StartedThread;
      try {
        next = await startThread(pglite, dataDir);
      } catch {
        if (!stopped) restartAfter(Math.min(delayMs * 2, MAX_RESTART_AFTER_MS));
        return;
      }
      if (stopped) {
        await next.worker.terminate();
        return;
      }
      worker = next.worker;
      attach(worker);
      restarts++;
      inTransaction = false;
      restarting = null;
      // The new engine listens to every channel the store had subscribers on, before any other
      // statement: nothing sent from now on is missed. What the last one had not delivered may
      // be, so each subscriber then hears `null` and reads afresh.
      for (const [channel, subscription] of subscriptions) {
        subscription.started = ask<void>('listen', { channel });
        subscription.started.then(
          () => {
            for (const handler of subscription.handlers) handler(null);
          },
          () => {},
        );
      }
    }, delayMs);
    // A process that has nothing else to do does not wait for its store to come back.
    timer.unref();
  };
  attach(worker);

  function ask<T>(
    op: string,
    fields: Record<string, unknown> = {},
    transfer: ArrayBuffer[] = [],
  ): Promise<T> {
    const away = stopped ?? restarting;
    if (away) return Promise.reject(away);
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      if (pending.size === 1) worker.ref();
      worker.postMessage({ id, op, ...fields }, transfer);
    });
  }

  const serializers: ProtocolEngine['serializers'] = { ...types.serializers };
  const parsers: ProtocolEngine['parsers'] = { ...types.parsers, ...STORE_PARSERS };
  for (const { oid, typarray } of first.arrayTypes) {
    serializers[typarray] = (value) => types.arraySerializer(value, serializers[oid], typarray);
    parsers[typarray] = (text) => types.arrayParser(text, parsers[oid]!, typarray);
  }
  // One store's statements and scripts take turns, as PGlite's own lock has them do inline.
  const turns = new Mutex();

  const engine: ThreadEngine = {
    get thread() {
      return worker;
    },
    async execProtocol(message) {
      // A copy of just these bytes, to move: the message may be a view of a larger shared buffer.
      const bytes = new Uint8Array(message);
      const answer = await ask<Uint8Array>('protocol', { message: bytes }, [bytes.buffer]);
      const read: messages.BackendMessage[] = [];
      new protocol.Parser().parse(answer, (backend) => read.push(backend));
      return { messages: read };
    },
    serializers,
    parsers,
    isInTransaction: () => inTransaction,
    restarts: () => restarts,
    runExclusive: (work) => turns.runExclusive(work),
    async listen(channel, handler) {
      let subscription = subscriptions.get(channel);
      if (!subscription) {
        const started = ask<void>('listen', { channel });
        const created = { handlers: new Set<(payload: string | null) => void>(), started };
        subscriptions.set(channel, created);
        // A LISTEN that failed (inside a transaction that had failed, say) leaves no trace, so
        // the next subscriber asks again.
        started.catch(() => {
          if (subscriptions.get(channel) === created && created.handlers.size === 0) {
            subscriptions.delete(channel);
          }
        });
        subscription = created;
      }
      // Every subscriber waits for the one LISTEN of its channel.
      await subscription.started;
      const { handlers } = subscription;
      handlers.add(handler);
      return async () => {
        handlers.delete(handler);
        if (handlers.size > 0 || subscriptions.get(channel) !== subscription) return;
        subscriptions.delete(channel);
        if (!stopped && !restarting) await ask('unlisten', { channel });
      };
    },
    async close() {
      if (stopped) return;
      try {
        // After the statements already asked for, as inline: they finish, later ones fail.
        await turns.runExclusive(() => ask('close'));
      } catch (error) {
        // A thread that is down (being started again, or stopping during the close) has nothing
        // left to close: the store closes all the same, and lets go of its folder, which the next
        // open recovers from its log, as after a crash.
        if (!(error instanceof StoreUnavailableError)) throw error;
      } finally {
        stopped ??= new StoreUnavailableError('The embedded store is closed');
        failPending(stopped);
        await worker.terminate();
      }
    },
  };
  return new PreparedPGlite(engine);
}

/** How long after its thread stopped the store starts it again, at first and at most. */
const RESTART_AFTER_MS = 1000;
const MAX_RESTART_AFTER_MS = 30_000;

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
