import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { Kysely, Migrator, PostgresDialect, type PostgresPool, type PostgresPoolClient, sql } from 'kysely';
import pg from 'pg';
import { StoreUnavailableError } from './availability.js';
import type { Database } from './database.js';
import { STORE_PARSERS } from './int8.js';
import {
  createPGliteListener,
  createPostgresListener,
  cutConnection,
  type NotificationHandler,
} from './listener.js';
import { MIGRATIONS } from './migrations/index.js';
import { createPGliteDialect } from './pglite-dialect.js';
import { InlinePGlite } from './pglite-inline.js';
import type { EmbeddedDatabase } from './pglite-prepared.js';
import { openPGliteThread } from './pglite-thread.js';

export interface StoreOptions {
  /**
   * Postgres connection string (`postgres://...`), `memory://` for a throwaway embedded store,
   * or omitted (or blank) for the embedded PGlite store at `dataDir`. Any other value is refused.
   */
  url?: string;
  /** Folder of the embedded store. Default: `SERVICE_DATA_DIR` or `.service/data`. */
  dataDir?: string;
  /** Connections in the Postgres pool. Default 10. */
  poolSize?: number;
  /** Run migrations on open. Default true. */
  migrate?: boolean;
  /**
   * How long a request waits for a Postgres connection (a new one, or a free one of the pool)
   * before it fails as "store unavailable" (503). Default 5000 ms.
   */
  connectTimeoutMs?: number;
  /**
   * How long one Postgres statement may go unanswered before it fails as "store unavailable"
   * (503) and its connection is cut: a server that hangs (a stalled host, a silent network
   * partition) neither answers nor closes the connection. Migrations are not bounded. Default
   * 10000 ms (docs/storage.md says why).
   */
  queryTimeoutMs?: number;
  /**
   * Where the embedded store runs: on a `thread` of its own (default), so that its statements
   * never hold the caller's requests, or `inline` in the caller's thread (docs/storage.md weighs
   * the two).
   */
  embedded?: 'thread' | 'inline';
  /**
   * For `memory://`: the image of a migrated store (`createStoreImage`) to start from instead of
   * an empty one. It skips creating the database and running the migrations: about a quarter of
   * the time, for suites that open a throwaway store per test. Always inline; any migration the
   * image lacks still runs.
   */
  image?: Blob;
}

export interface Store {
  readonly db: Kysely<Database>;
  /** `postgres` for a server, `pglite` for the embedded store. */
  readonly kind: 'postgres' | 'pglite';
  /**
   * The embedded store: where it runs, on a `thread` of its own or `inline` (asked for, from an
   * image, or where a thread cannot load PGlite). Unset for a server.
   */
  readonly embedded?: 'thread' | 'inline';
  /** True when the database answers a trivial query within 2 s (for `/healthz`). */
  readonly ping: () => Promise<boolean>;
  /**
   * LISTEN on a channel; NOTIFYs sent by any process on the same database (inside a transaction:
   * once it commits) reach the handler. Resolves to an unsubscribe function.
   */
  listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/**
 * Opens the store: Postgres when a `postgres://` URL is given, else embedded PGlite; a URL of any
 * other scheme is refused, naming `DATABASE_URL` when it came from there.
 * Migrations run before the store is returned, serialised across processes (Kysely takes a
 * Postgres advisory lock; an embedded data folder admits one process at a time).
 *
 * @example
 * const store = await createStore({ url: process.env.DATABASE_URL });
 */
export async function createStore(options: StoreOptions = {}): Promise<Store> {
  const url = (options.url ?? process.env.DATABASE_URL)?.trim();
  // Anything else set is a typo (`postgress://`, a bare host) that would otherwise boot on the
  // embedded store, the data landing where no other instance sees it.
  if (url && url !== 'memory://' && !POSTGRES_URL.test(url)) {
    const name = options.url === undefined ? 'DATABASE_URL' : 'The store url';
    // The scheme alone: the rest may carry a password.
    const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0] ?? 'no scheme';
    throw new Error(
      `Invalid configuration: ${name} must be a postgres:// or postgresql:// URL (unset for the embedded store), got ${scheme}`,
    );
  }
  let migrationDb: Kysely<Database> | undefined;
  const store =
    url && POSTGRES_URL.test(url)
      ? openPostgres(
          url,
          options.poolSize ?? 10,
          options.connectTimeoutMs ?? 5000,
          options.queryTimeoutMs ?? QUERY_TIMEOUT_MS,
          (db) => {
            migrationDb = db;
          },
        )
      : url === 'memory://' && options.image
        ? storeOn(await InlinePGlite.open(undefined, options.image), () => {})
        : await openPGlite(
            url === 'memory://' ? undefined : resolveDataDir(options.dataDir),
            options.embedded ?? 'thread',
          );
  if (options.migrate !== false) {
    try {
      await migrateToLatest(migrationDb ?? store.db);
    } catch (error) {
      await store.close();
      throw error;
    }
  }
  return store;
}

const POSTGRES_URL = /^postgres(ql)?:\/\//;

/**
 * The image of a new, migrated `memory://` store, for `createStore`'s `image`: its data folder as
 * an uncompressed tarball (about 40 MB).
 *
 * @example
 * const image = await createStoreImage();
 * const store = await createStore({ url: 'memory://', image });
 */
export async function createStoreImage(): Promise<Blob> {
  const pglite = await InlinePGlite.open(undefined);
  const store = storeOn(pglite, () => {});
  try {
    await migrateToLatest(store.db);
    return await pglite.dump();
  } finally {
    await store.close();
  }
}

/** The embedded store's folder; a blank value counts as unset. */
export function resolveDataDir(dataDir?: string): string {
  return resolve(dataDir?.trim() || process.env.SERVICE_DATA_DIR?.trim() || '.service/data');
}

export async function migrateToLatest(db: Kysely<Database>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
  });
  const { error, results } = await migrator.migrateToLatest();
  if (!error) return;
  const failed = results?.find((r) => r.status === 'Error')?.migrationName;
  if (failed) throw new Error(`Store migration ${failed} failed`, { cause: error });
  // No migration ran: the store itself could not be reached (or locked). Its own message says
  // why (`connect ECONNREFUSED 10.0.0.5:5432`); a connection string is never part of it.
  const why = error instanceof Error ? error.message : String(error);
  throw new Error(`The store could not be reached: ${why}`, { cause: error });
}

/**
 * Default bound on one Postgres statement. Far above any statement the platform runs outside
 * migrations (milliseconds, a settlement batch well under a second), and short enough that a
 * call in flight when the server hangs answers 503 within the 10 s a client commonly waits.
 */
const QUERY_TIMEOUT_MS = 10_000;

/**
 * How long closing waits for a server to see its connections off: one that hangs never answers
 * the goodbye, so after this they are cut.
 */
const CLOSE_TIMEOUT_MS = 1000;

function openPostgres(
  url: string,
  max: number,
  connectTimeoutMs: number,
  queryTimeoutMs: number,
  onMigrationDb: (db: Kysely<Database>) => void,
): Store {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    // A server that went away without a word (failover, a dropped network) is noticed in seconds,
    // not after the kernel's default two hours.
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEP_ALIVE_DELAY_MS,
    connectionTimeoutMillis: connectTimeoutMs,
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        STORE_PARSERS[oid] ?? pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // A client that loses its server must not crash the process. An idle one is reported on the
  // pool (and replaced). One checked out emits 'error' on itself, with no listener of the pool's
  // attached: its query fails on its own (and the caller answers 503), the pool drops it when it
  // is released, and this listener keeps the event from being unhandled, which would end the
  // process.
  pool.on('error', () => {});
  const clients = new Set<pg.PoolClient>();
  pool.on('connect', (client) => {
    clients.add(client);
    client.on('error', () => {});
  });
  pool.on('remove', (client) => clients.delete(client));
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: boundedPool(pool, queryTimeoutMs) }),
  });
  // Migrations wait for each other's lock and may rewrite a large table: they are not bounded.
  // This instance is never destroyed: the pool is the store's, ended by `close`.
  onMigrationDb(new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }));
  const listener = createPostgresListener(url, { connectTimeoutMs, queryTimeoutMs });
  return {
    db,
    kind: 'postgres',
    ping: () => ping(db),
    listen: (channel, handler) => listener.listen(channel, handler),
    close: async () => {
      const closed = Promise.all([listener.close(), db.destroy()]);
      const timer = setTimeout(() => {
        // A server that hangs: the pool would wait on it for ever (a goodbye it never answers,
        // a statement still out). Cutting the sockets fails what is still out, and lets both end.
        for (const client of clients) cutConnection(client);
        listener.cut();
      }, CLOSE_TIMEOUT_MS);
      try {
        await closed;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Seconds of silence before TCP keep-alive probes a connection (the kernel default is 2 h). */
const KEEP_ALIVE_DELAY_MS = 5000;

/**
 * The pool as Kysely sees it, with every statement bounded by `timeoutMs`. A statement that
 * takes longer fails as the store being unavailable, and its connection is cut, never handed to
 * the next request: the server may still be working on it (or frozen in it), so the connection
 * is in an unknown state, maybe inside a transaction. Its other statements (the rollback Kysely
 * sends) fail at once with the same error; cutting the socket makes the server roll back.
 */
function boundedPool(pool: pg.Pool, timeoutMs: number): PostgresPool {
  return {
    connect: async () => {
      const client = await pool.connect();
      let timedOut: StoreUnavailableError | undefined;
      const bounded: PostgresPoolClient = {
        query: (async (text: string, values: readonly unknown[]) => {
          if (timedOut) throw timedOut;
          let timer: ReturnType<typeof setTimeout> | undefined;
          const timeout = new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              timedOut = new StoreUnavailableError(`The store did not answer within ${timeoutMs} ms`);
              cutConnection(client);
              reject(timedOut);
            }, timeoutMs);
          });
          try {
            return await Promise.race([client.query(text, [...values]), timeout]);
          } finally {
            clearTimeout(timer);
          }
        }) as unknown as PostgresPoolClient['query'],
        // A cut client leaves the pool (any error does), and the pool opens a new one.
        release: () => client.release(timedOut),
      };
      return bounded;
    },
    end: () => pool.end(),
  };
}

async function openPGlite(dataDir: string | undefined, where: 'thread' | 'inline'): Promise<Store> {
  const releaseLock = dataDir ? lockDataDir(dataDir) : () => {};
  let pglite: EmbeddedDatabase;
  try {
    // A bundler that compiles the platform into its own chunks (Next.js) may leave PGlite where
    // a thread cannot load it: the store then runs in this thread, as it would inline.
    pglite =
      where === 'thread'
        ? await openPGliteThread(dataDir).catch(() => InlinePGlite.open(dataDir))
        : await InlinePGlite.open(dataDir);
  } catch (error) {
    releaseLock();
    throw error;
  }
  return storeOn(pglite, releaseLock);
}

/** The store on an open engine (inline or on its thread); `releaseLock` lets go of its data folder once it is closed. */
function storeOn(pglite: EmbeddedDatabase, releaseLock: () => void): Store {
  const inline = pglite instanceof InlinePGlite;
  const db = new Kysely<Database>({
    dialect: createPGliteDialect(pglite, inline ? { shareThreadAfterMs: SHARE_THREAD_AFTER_MS } : {}),
  });
  const listener = createPGliteListener(pglite);
  return {
    db,
    kind: 'pglite',
    embedded: inline ? 'inline' : 'thread',
    ping: () => ping(db),
    listen: (channel, handler) => listener.listen(channel, handler),
    close: async () => {
      await db.destroy();
      await pglite.close();
      releaseLock();
    },
  };
}

/**
 * Inline, the embedded store lets the event loop turn once its statements have held the thread
 * this long: a request waits at most about this plus one statement for a settlement batch.
 */
const SHARE_THREAD_AFTER_MS = 1;

/** Bound on a health check: a server that does not answer in time counts as away. */
const PING_TIMEOUT_MS = 2000;

async function ping(db: Kysely<Database>): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS);
  });
  const answer = sql`select 1`.execute(db).then(
    () => true,
    () => false,
  );
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Data folders this process holds open, so a second open here is refused, not taken over. */
const HELD_DATA_DIRS = new Set<string>();

/**
 * An embedded data folder is one Postgres cluster with one backend: a second process opening it
 * would corrupt it. A lock file beside the folder, holding the owner's pid, admits one process;
 * a lock left by a process that no longer runs (or by an earlier life of our own pid, as
 * happens in containers) is taken over.
 */
function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const lockPath = `${dataDir.replace(/[\\/]+$/, '')}.lock`;
  const inUse = (owner: number | string) =>
    new Error(
      `The embedded store at ${dataDir} is in use by process ${owner}. ` +
        'Stop it, or set DATABASE_URL to a Postgres server to run several instances.',
    );
  if (HELD_DATA_DIRS.has(lockPath)) throw inUse(process.pid);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      HELD_DATA_DIRS.add(lockPath);
      return () => {
        HELD_DATA_DIRS.delete(lockPath);
        rmSync(lockPath, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(readFileSync(lockPath, 'utf8').trim());
      if (owner && owner !== process.pid && isRunning(owner)) throw inUse(owner);
      rmSync(lockPath, { force: true });
    }
  }
  throw new Error(`Could not lock the embedded store at ${dataDir}`);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
