/**
 * Audit events: what happened on a principal's behalf (approvals, grants, tool calls from the
 * agent and the door, runs, rejected webhooks). `GET /activity` lists the caller's own.
 *
 * One writer for the one table: events wait a few milliseconds and go out many per insert, so
 * neither a turn nor a door call waits on its audit trail.
 */
import type { Kysely } from 'kysely';
import { describeError, type Logger } from '../http/logger.js';
import type { Database } from '../store/database.js';

export interface AuditEvent {
  id: number;
  kind: string;
  at: string;
  data: Record<string, unknown>;
}

/** Events wait at most this long to be written. */
const AUDIT_DELAY_MS = 25;
/** Rows per insert at most; this many queued events are written at once, without the wait. */
const AUDIT_BATCH_MAX = 200;

interface PendingAudit {
  owner: string | null;
  kind: string;
  data: string;
}

export class AuditLog {
  #queue: PendingAudit[] = [];
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** The inserts in flight, one after the other. */
  #writing: Promise<void> = Promise.resolve();

  /** `logger` hears of failed writes; an audit failure never fails the action it records. */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly logger?: Logger,
  ) {}

  /** Queues one event; it is written within a few milliseconds, with its neighbours. */
  record(owner: string | null, kind: string, data: Record<string, unknown> = {}): void {
    this.#queue.push({ owner, kind, data: JSON.stringify(data) });
    if (this.#queue.length >= AUDIT_BATCH_MAX) {
      void this.flush();
    } else if (!this.#timer) {
      this.#timer = setTimeout(() => void this.flush(), AUDIT_DELAY_MS);
      this.#timer.unref?.();
    }
  }

  /**
   * Writes one event before resolving, for security events that must be on record when the
   * answer goes out (a rejected webhook or tick). Never throws.
   */
  async recordNow(owner: string | null, kind: string, data: Record<string, unknown> = {}): Promise<void> {
    await this.#write([{ owner, kind, data: JSON.stringify(data) }]);
  }

  /** Writes every queued event now; resolves when they are all in the table. */
  flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    while (this.#queue.length > 0) {
      const rows = this.#queue.splice(0, AUDIT_BATCH_MAX);
      this.#writing = this.#writing.then(() => this.#write(rows));
    }
    return this.#writing;
  }

  /** The owner's events, newest first, queued ones included. */
  async list(owner: string, options: { limit: number; before?: number }): Promise<AuditEvent[]> {
    await this.flush();
    return listAudit(this.db, owner, options);
  }

  async #write(rows: PendingAudit[]): Promise<void> {
    try {
      await this.db.insertInto('wire_audit_events').values(rows).execute();
    } catch (error) {
      this.logger?.warn('audit.write_failed', { events: rows.length, ...describeError(error) });
    }
  }
}

/**
 * The owner's events as stored, newest first; `before` is the id of the last event of the
 * previous page. Events still queued in an `AuditLog` are not there yet (`AuditLog.list` writes them first).
 */
export async function listAudit(
  db: Kysely<Database>,
  owner: string,
  options: { limit: number; before?: number },
): Promise<AuditEvent[]> {
  let query = db
    .selectFrom('wire_audit_events')
    .select(['id', 'kind', 'data', 'created_at'])
    .where('owner', '=', owner)
    .orderBy('id', 'desc')
    .limit(options.limit);
  if (options.before !== undefined) query = query.where('id', '<', options.before);
  const rows = await query.execute();
  return rows.map((row) => ({
    id: Number(row.id),
    kind: row.kind,
    at: new Date(row.created_at).toISOString(),
    data: row.data,
  }));
}
