import { type messages, parse, protocol, type Results, type types } from '@electric-sql/pglite';
import { StoreUnavailableError } from './availability.js';

/** What the store asks of an embedded database: PGlite in this thread, or on a thread of its own. */
export interface EmbeddedDatabase {
  query<R>(sql: string, params?: unknown[]): Promise<EmbeddedResult<R>>;
  /** A script of statements by the simple protocol; one result per statement. */
  exec(sql: string): Promise<Array<EmbeddedResult<unknown>>>;
  /**
   * Each notification's payload on the channel, or `null` once the engine was started again
   * (notifications may have been missed), as the Postgres listener does after a reconnect.
   */
  listen(channel: string, handler: (payload: string | null) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface EmbeddedResult<R> {
  rows: R[];
  affectedRows?: number;
}

/**
 * Settings of the engine's one session, made as it opens, inline or on its thread.
 *
 * Every run of a named statement is planned with its values (`force_custom_plan`): see
 * `PreparedPGlite`.
 *
 * A new WAL segment (one per 16 MB of writes) is not filled with zeros before its first record:
 * PGlite writes the zeros through its file system a page at a time, which held the thread 5 to 8
 * ms on disk and 20 to 60 ms in memory once a segment (docs/storage.md). The fill only reserves
 * the disk space ahead of the records; without it a full disk shows at a write instead.
 */
export const ENGINE_SETTINGS = 'set plan_cache_mode = force_custom_plan; set wal_init_zero = off';

/**
 * What the store needs of an engine to run statements by the extended protocol: PGlite in this
 * thread, or PGlite on a thread of its own, reached by messages (`pglite-thread.ts`).
 */
export interface ProtocolEngine {
  /** Sends protocol messages in one trip; an error the engine answers is thrown. */
  execProtocol(message: Uint8Array): Promise<{ messages: messages.BackendMessage[] }>;
  /** Writes a parameter's value by its type's oid (PGlite's serializers, arrays included). */
  readonly serializers: Record<number, (value: unknown) => string>;
  readonly parsers: Record<number, types.Parser>;
  /** Whether the engine's session is inside a transaction, as of the last trip. */
  isInTransaction(): boolean;
  /**
   * How many times the engine was started again after it stopped (on its thread): a new start
   * has none of the named statements and no transaction of the one before. Unset: never.
   */
  restarts?(): number;
  /** Runs `work` with no other statement of this engine's store in between. */
  runExclusive<T>(work: () => Promise<T>): Promise<T>;
  listen(channel: string, handler: (payload: string | null) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/**
 * PGlite with each statement sent to the engine in one trip and parsed once.
 *
 * `PGlite.query` sends a statement's parse, describe, bind, describe, execute and sync to the
 * engine one message at a time: six trips for every statement, each parsed again. Here a text is
 * parsed once, as a named statement (asked for its parameter types in the same trip), and each
 * run is its bind, describe, execute and sync in one buffer, as a driver for a Postgres server
 * pipelines them (docs/storage.md has the figures).
 *
 * Every run is still planned with its values (`plan_cache_mode = force_custom_plan`): from its
 * sixth run Postgres may otherwise plan a named statement apart from its values, and an `on
 * conflict` on a partial index whose predicate is a parameter then finds no index.
 *
 * Values are written as `PGlite.query` writes them, by its serializer for the type each
 * parameter is described as, and rows are read by its parsers, so results do not change.
 */
export class PreparedPGlite implements EmbeddedDatabase {
  /** The named statement of each text, least recently used first. */
  readonly #prepared = new Map<string, Prepared>();
  /** Statements let go of, closed in the engine on the next trip. */
  #closing: string[] = [];
  #named = 0;
  /** The engine's restarts as of the last turn. */
  #restarts: number;
  /** Whether the engine's session was in a transaction after the last trip, answered or not. */
  #inTransaction = false;
  /** A transaction was open when the engine stopped: its statements fail until its rollback. */
  #lostTransaction = false;

  constructor(readonly engine: ProtocolEngine) {
    this.#restarts = engine.restarts?.() ?? 0;
  }

  query<R>(sql: string, params: unknown[] = []): Promise<Results<R>> {
    return this.engine.runExclusive(async () => {
      this.#startTurn(sql);
      try {
        return await this.#run<R>(sql, params);
      } finally {
        this.#endTurn(sql);
      }
    });
  }

  /** A script by the simple protocol (as `PGlite.exec` sends it: the query, then a sync). */
  exec(sql: string): Promise<Array<Results<unknown>>> {
    return this.engine.runExclusive(async () => {
      this.#startTurn(sql);
      // A script may change the schema, and with it what a parsed statement means: texts are
      // parsed again after one. Nothing else runs in this turn, so none is parsed in between.
      if (!KEEPS_SCHEMA.test(sql)) this.#forgetAll();
      try {
        const { messages } = await this.#trip(
          Buffer.concat([protocol.serialize.query(sql), protocol.serialize.sync()]),
        );
        return parse.parseResults(messages, this.engine.parsers);
      } finally {
        this.#endTurn(sql);
      }
    });
  }

  listen(channel: string, handler: (payload: string | null) => void): Promise<() => Promise<void>> {
    return this.engine.listen(channel, handler);
  }

  close(): Promise<void> {
    return this.engine.close();
  }

  async #run<R>(sql: string, params: unknown[]): Promise<Results<R>> {
    try {
      return await this.#runOnce<R>(sql, params);
    } catch (error) {
      if (!STALE_STATEMENT.has((error as { code?: string }).code ?? '')) throw error;
      // The engine no longer has the statement, or a change this store did not see (made inside
      // a statement, say) altered its result: it is parsed afresh, and, outside a transaction,
      // where the failure changed nothing, run once more.
      this.#forget(sql);
      if (this.engine.isInTransaction()) throw error;
      return this.#runOnce<R>(sql, params);
    }
  }

  async #runOnce<R>(sql: string, params: unknown[]): Promise<Results<R>> {
    const statement = this.#prepared.get(sql) ?? (await this.#prepare(sql));
    // Most recently used goes last; the first in the map is the next to let go.
    this.#prepared.delete(sql);
    this.#prepared.set(sql, statement);
    const values = params.map((param, i) => {
      if (param === null || param === undefined) return null;
      const serialize = this.engine.serializers[statement.types[i]!];
      return serialize ? serialize(param) : String(param);
    });
    const { messages } = await this.#trip(
      // The messages in one buffer: one trip into the engine.
      Buffer.concat([
        ...this.#closeMessages(),
        protocol.serialize.bind({ statement: statement.name, values }),
        protocol.serialize.describe({ type: 'P' }),
        protocol.serialize.execute({}),
        protocol.serialize.sync(),
      ]),
    );
    return parse.parseResults(messages, this.engine.parsers)[0] as Results<R>;
  }

  /** Parses the text as a named statement and asks its parameter types (a bad statement throws here). */
  async #prepare(sql: string): Promise<Prepared> {
    const name = `s${++this.#named}`;
    let messages: messages.BackendMessage[];
    try {
      ({ messages } = await this.#trip(
        Buffer.concat([
          ...this.#closeMessages(),
          protocol.serialize.parse({ name, text: sql }),
          protocol.serialize.describe({ type: 'S', name }),
          protocol.serialize.sync(),
        ]),
      ));
    } catch (error) {
      // The parse may have got through before what failed: the name is closed to be sure (closing
      // a statement that does not exist is no error).
      this.#closing.push(name);
      throw error;
    }
    const statement = { name, types: parse.parseDescribeStatementResults(messages) };
    this.#prepared.set(sql, statement);
    if (this.#prepared.size > MAX_PREPARED) this.#forget(this.#prepared.keys().next().value!);
    return statement;
  }

  /** One trip into the engine, noting whether its session is left in a transaction. */
  async #trip(message: Uint8Array): Promise<{ messages: messages.BackendMessage[] }> {
    try {
      const answer = await this.engine.execProtocol(message);
      this.#inTransaction = this.engine.isInTransaction();
      return answer;
    } catch (error) {
      // An engine that answered with an error says where its session stands. One that could not
      // be reached, or stopped during the trip, leaves it as this store last knew it.
      if (!(error instanceof StoreUnavailableError)) this.#inTransaction = this.engine.isInTransaction();
      throw error;
    }
  }

  /**
   * Before each turn: after the engine was started again, its named statements are gone, and a
   * transaction that was open is lost. Its later statements fail, as they would on a Postgres
   * connection that broke, rather than run outside it; its rollback ends it.
   */
  #startTurn(sql: string): void {
    const restarts = this.engine.restarts?.() ?? 0;
    if (restarts !== this.#restarts) {
      this.#restarts = restarts;
      this.#prepared.clear();
      this.#closing = [];
      this.#lostTransaction = this.#inTransaction;
      this.#inTransaction = false;
    }
    if (!this.#lostTransaction) return;
    if (ROLLBACK.test(sql)) this.#lostTransaction = false;
    else throw new StoreUnavailableError('The embedded store restarted: the transaction under way was lost');
  }

  /**
   * After each turn: a rollback ends its transaction, also one sent while the engine was down
   * (it then fails). Its caller is done with the transaction, and the engine that comes back has
   * none open, so the statements after it are not refused as the lost transaction's.
   */
  #endTurn(sql: string): void {
    if (ROLLBACK.test(sql)) this.#inTransaction = false;
  }

  #forget(sql: string): void {
    const statement = this.#prepared.get(sql);
    if (!statement) return;
    this.#prepared.delete(sql);
    this.#closing.push(statement.name);
  }

  #forgetAll(): void {
    for (const { name } of this.#prepared.values()) this.#closing.push(name);
    this.#prepared.clear();
  }

  /** Close messages for the statements let go of since the last trip (sent ahead of it). */
  #closeMessages(): Uint8Array[] {
    if (this.#closing.length === 0) return [];
    const closing = this.#closing;
    this.#closing = [];
    return closing.map((name) => protocol.serialize.close({ type: 'S', name }));
  }
}

interface Prepared {
  name: string;
  types: number[];
}

/**
 * Statement texts kept parsed. The store's code sends a few hundred distinct texts; lists of
 * varying length add more, and the least recently used are closed past this.
 */
export const MAX_PREPARED = 500;

/**
 * Scripts that leave the schema as it is: one statement of transaction control, a read, or a
 * notification channel. Not a rollback, which may undo a change made since its `begin`.
 */
const KEEPS_SCHEMA = /^\s*(begin|commit|savepoint|release|select|listen|unlisten)\b[^;]*;?\s*$/i;

/** The end of a transaction by rollback (not a rollback to a savepoint, which goes on in it). */
const ROLLBACK = /^\s*(rollback|abort)\s*;?\s*$/i;

/**
 * A kept statement the engine no longer has (`26000`), or whose result a schema change altered
 * (`0A000`: "cached plan must not change result type").
 */
const STALE_STATEMENT = new Set(['26000', '0A000']);
