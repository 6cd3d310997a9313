import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type { EmbeddedDatabase } from './pglite-prepared.js';

/**
 * Kysely dialect over one embedded PGlite instance (in this thread or on its own).
 *
 * PGlite is a single Postgres backend, so it has exactly one session. Kysely opens a
 * transaction with `BEGIN` on a connection and then runs further queries on it; if two
 * requests shared the backend at once, one request's queries would land inside the other's
 * transaction. The driver therefore hands out the one connection to one holder at a time.
 */
export function createPGliteDialect(db: EmbeddedDatabase, options: PGliteDialectOptions = {}): Dialect {
  return {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new PGliteDriver(db, options),
    createIntrospector: (kysely) => new PostgresIntrospector(kysely),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  };
}

export interface PGliteDialectOptions {
  /**
   * For PGlite in this thread, which answers in microtasks: once statements have held the thread
   * this long without a turn of the event loop, the next statement waits for one. A settlement
   * batch of a dozen statements then lets requests in between them instead of holding them all
   * until it commits. Unset: statements follow each other at once.
   */
  shareThreadAfterMs?: number;
}

class PGliteDriver implements Driver {
  readonly #connection: PGliteConnection;
  #tail: Promise<void> = Promise.resolve();
  #release: (() => void) | undefined;

  constructor(db: EmbeddedDatabase, options: PGliteDialectOptions) {
    this.#connection = new PGliteConnection(db, options.shareThreadAfterMs);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.#tail;
    let release!: () => void;
    this.#tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    this.#release = release;
    return this.#connection;
  }

  async releaseConnection(): Promise<void> {
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const isolation = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    await connection.executeQuery({ sql: `begin${isolation}`, parameters: [] } as unknown as CompiledQuery);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery({ sql: 'commit', parameters: [] } as unknown as CompiledQuery);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery({ sql: 'rollback', parameters: [] } as unknown as CompiledQuery);
  }

  async destroy(): Promise<void> {
    // The PGlite instance belongs to the store, which closes it.
  }
}

class PGliteConnection implements DatabaseConnection {
  /** Since when statements have held the thread; null once the event loop has turned. */
  #heldSince: number | null = null;

  constructor(
    readonly db: EmbeddedDatabase,
    readonly shareThreadAfterMs: number | undefined,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.shareThreadAfterMs !== undefined) await this.#shareThread(this.shareThreadAfterMs);
    // A query without parameters may be a multi-statement script (migrations); only the
    // simple protocol (`exec`) accepts those. Its last statement's result is the answer.
    const result =
      query.parameters.length === 0
        ? ((await this.db.exec(query.sql)).at(-1) ?? { rows: [], affectedRows: 0 })
        : await this.db.query<R>(query.sql, query.parameters as unknown[]);
    const affected = result.affectedRows;
    return {
      rows: result.rows as R[],
      ...(affected !== undefined && /^\s*(insert|update|delete|merge)/i.test(query.sql)
        ? { numAffectedRows: BigInt(affected) }
        : {}),
    };
  }

  async #shareThread(afterMs: number): Promise<void> {
    if (this.#heldSince !== null && performance.now() - this.#heldSince > afterMs) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (this.#heldSince === null) {
      this.#heldSince = performance.now();
      // Runs at the loop's next turn (before the wait above ends: immediates run in order).
      setImmediate(() => {
        this.#heldSince = null;
      });
    }
  }

  // biome-ignore lint/correctness/useYield: streaming is not supported by the embedded store
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('Streaming queries are not supported on the embedded PGlite store');
  }
}
