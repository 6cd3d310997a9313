import { PGlite, parse, protocol, type Results } from '@electric-sql/pglite';
import { asText, DATE_OID, INT8_OID, NUMERIC_OID, parseInt8 } from './int8.js';
import type { EmbeddedDatabase } from './pglite-thread.js';

/**
 * PGlite in this thread, each statement sent to the engine in one trip.
 *
 * `PGlite.query` sends a statement's parse, describe, bind, describe, execute and sync to the
 * engine one message at a time: six trips for every statement. Here they go together, as a
 * driver for a Postgres server pipelines them, and a small statement costs about a third less.
 * The statement stays unnamed, parsed and planned with its values as a server is sent it by
 * `pg` (from its sixth run a named one may be planned apart from its values: an `on conflict` on
 * a partial index whose predicate is a parameter then finds no index).
 *
 * Values are written as `PGlite.query` writes them, by its serializer for the type each
 * parameter is described as (asked of the engine the first time a text is seen, and kept), and
 * rows are read by its parsers, so results do not change.
 */
export class InlinePGlite implements EmbeddedDatabase {
  /** Each statement text's parameter types, least recently used first. */
  readonly #paramTypes = new Map<string, number[]>();

  private constructor(readonly pglite: PGlite) {}

  static async open(dataDir: string | undefined): Promise<InlinePGlite> {
    const pglite = new PGlite({
      ...(dataDir ? { dataDir } : {}),
      parsers: { [INT8_OID]: parseInt8, [DATE_OID]: asText, [NUMERIC_OID]: asText },
    });
    await pglite.waitReady;
    return new InlinePGlite(pglite);
  }

  query<R>(sql: string, params: unknown[] = []): Promise<Results<R>> {
    return this.pglite._runExclusiveQuery(() => this.#run<R>(sql, params));
  }

  exec(sql: string): Promise<Array<Results<unknown>>> {
    // A script may change the schema, and with it the types of a statement's parameters: they
    // are asked again after one. Transaction control and reads keep them.
    if (!KEEPS_SCHEMA.test(sql)) this.#paramTypes.clear();
    return this.pglite.exec(sql);
  }

  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>> {
    return this.pglite.listen(channel, handler);
  }

  close(): Promise<void> {
    return this.pglite.close();
  }

  async #run<R>(sql: string, params: unknown[]): Promise<Results<R>> {
    const types = this.#paramTypes.get(sql) ?? (await this.#describe(sql));
    // Most recently used goes last; the first in the map is the next to let go.
    this.#paramTypes.delete(sql);
    this.#paramTypes.set(sql, types);
    const values = params.map((param, i) => {
      if (param === null || param === undefined) return null;
      const serialize = this.pglite.serializers[types[i]!];
      return serialize ? serialize(param) : String(param);
    });
    const { messages } = await this.pglite.execProtocol(
      // The messages in one buffer: one trip into the engine.
      Buffer.concat([
        protocol.serialize.parse({ text: sql }),
        protocol.serialize.bind({ values }),
        protocol.serialize.describe({ type: 'P' }),
        protocol.serialize.execute({}),
        protocol.serialize.sync(),
      ]),
    );
    return parse.parseResults(messages, this.pglite.parsers)[0] as Results<R>;
  }

  /** The statement's parameter types, as the engine describes them (a bad statement throws here). */
  async #describe(sql: string): Promise<number[]> {
    const { messages } = await this.pglite.execProtocol(
      Buffer.concat([
        protocol.serialize.parse({ text: sql }),
        protocol.serialize.describe({ type: 'S' }),
        protocol.serialize.sync(),
      ]),
    );
    const types = parse.parseDescribeStatementResults(messages);
    this.#paramTypes.set(sql, types);
    if (this.#paramTypes.size > MAX_DESCRIBED) {
      this.#paramTypes.delete(this.#paramTypes.keys().next().value!);
    }
    return types;
  }
}

/**
 * Statement texts whose parameter types are kept. The store's code sends a few hundred distinct
 * texts; lists of varying length add more, and the least recently used are let go of past this.
 */
export const MAX_DESCRIBED = 500;

/** Scripts that leave the schema as it is: transaction control, reads, notification channels. */
const KEEPS_SCHEMA = /^\s*(begin|commit|rollback|savepoint|release|select|listen|unlisten)\b/i;
