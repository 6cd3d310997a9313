import type { Kysely } from 'kysely';
import type { Database } from './database.js';

/** The status of a reservation whose request is still running. */
export const IDEMPOTENCY_IN_PROGRESS = 0;

/** Which remembered request: one `Idempotency-Key` of one tenant on one route. */
export interface IdempotencyScope {
  tenantId: string;
  /** The route, e.g. `POST /api/connections`. */
  scope: string;
  key: string;
}

export interface IdempotencyRecord {
  /** Hash of the request the key was first used with. */
  requestHash: string;
  /** The answer's status, or `IDEMPOTENCY_IN_PROGRESS` while the first request still runs. */
  status: number;
  /** The answer's JSON body as text (empty while in progress). */
  body: string;
}

/**
 * The stored answers of idempotent requests, shared by every instance. A key is reserved before
 * its request runs (one insert wins a race), completed with the answer, or forgotten.
 */
export class IdempotencyRecords {
  constructor(private readonly db: Kysely<Database>) {}

  /** Drops the key's record when it was made before `before` (a stale key may be used afresh). */
  async expire(id: IdempotencyScope, before: Date): Promise<void> {
    await this.db
      .deleteFrom('idempotency_records')
      .where((eb) => eb.and(keyOf(id)))
      .where('created_at', '<', before)
      .execute();
  }

  /** Reserves the key for a request; false when the key already has a record. */
  async reserve(id: IdempotencyScope, requestHash: string): Promise<boolean> {
    const reserved = await this.db
      .insertInto('idempotency_records')
      .values({
        tenant_id: id.tenantId,
        scope: id.scope,
        key: id.key,
        request_hash: requestHash,
        status: IDEMPOTENCY_IN_PROGRESS,
        body: '',
      })
      .onConflict((oc) => oc.columns(['tenant_id', 'scope', 'key']).doNothing())
      .returning('key')
      .executeTakeFirst();
    return reserved !== undefined;
  }

  async find(id: IdempotencyScope): Promise<IdempotencyRecord | null> {
    const row = await this.db
      .selectFrom('idempotency_records')
      .select(['request_hash', 'status', 'body'])
      .where((eb) => eb.and(keyOf(id)))
      .executeTakeFirst();
    return row ? { requestHash: row.request_hash, status: row.status, body: row.body } : null;
  }

  /** Stores the answer of the reserved key's request, to be replayed. */
  async complete(id: IdempotencyScope, answer: { status: number; body: string }): Promise<void> {
    await this.db
      .updateTable('idempotency_records')
      .set(answer)
      .where((eb) => eb.and(keyOf(id)))
      .execute();
  }

  /** Releases the key, so the request can be retried. */
  async forget(id: IdempotencyScope): Promise<void> {
    await this.db
      .deleteFrom('idempotency_records')
      .where((eb) => eb.and(keyOf(id)))
      .execute();
  }
}

/** The record's primary key as column values. */
function keyOf(id: IdempotencyScope) {
  return { tenant_id: id.tenantId, scope: id.scope, key: id.key };
}
