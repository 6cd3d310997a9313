/**
 * Audit events: what happened on a principal's behalf (approvals, grants, tool calls, runs,
 * rejected webhooks). `GET /activity` lists the caller's own.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';

export interface AuditEvent {
  id: number;
  kind: string;
  at: string;
  data: Record<string, unknown>;
}

/** Events wait at most this long to be written, many in one insert. */
const AUDIT_DELAY_MS = 25;

interface PendingAudit {
  owner: string | null;
  kind: string;
  data: string;
}

/** Per-database write-behind queues, so a turn never waits on its audit trail. */
const queues = new WeakMap<
  Kysely<Database>,
  { pending: PendingAudit[]; timer: ReturnType<typeof setTimeout> | null; writing: Promise<void> | null }
>();

/**
 * Records one event. Written a few milliseconds later in a batch; `{ now: true }` writes it
 * before resolving (for security events that must be on record when the answer goes out).
 * Never throws: an audit failure must not fail the action it records.
 */
export async function recordAudit(
  db: Kysely<Database>,
  owner: string | null,
  kind: string,
  data: Record<string, unknown> = {},
  options: { now?: boolean; onError?: (error: unknown) => void } = {},
): Promise<void> {
  const event = { owner, kind, data: JSON.stringify(data) };
  if (options.now) {
    try {
      await db.insertInto('wire_audit_events').values(event).execute();
    } catch (error) {
      options.onError?.(error);
    }
    return;
  }
  let queue = queues.get(db);
  if (!queue) {
    queue = { pending: [], timer: null, writing: null };
    queues.set(db, queue);
  }
  queue.pending.push(event);
  if (!queue.timer && !queue.writing) {
    queue.timer = setTimeout(() => void flushAudit(db), AUDIT_DELAY_MS);
    queue.timer.unref?.();
  }
}

/** Writes every queued event of this database now. */
export async function flushAudit(db: Kysely<Database>): Promise<void> {
  const queue = queues.get(db);
  if (!queue) return;
  if (queue.timer) clearTimeout(queue.timer);
  queue.timer = null;
  while (queue.writing) await queue.writing;
  if (queue.pending.length === 0) return;
  const batch = queue.pending.splice(0);
  queue.writing = db
    .insertInto('wire_audit_events')
    .values(batch)
    .execute()
    .then(
      () => {},
      () => {},
    )
    .finally(() => {
      queue.writing = null;
    });
  await queue.writing;
  if (queue.pending.length > 0) await flushAudit(db);
}

/** The owner's events, newest first; `before` is the id of the last event of the previous page. */
export async function listAudit(
  db: Kysely<Database>,
  owner: string,
  options: { limit: number; before?: number },
): Promise<AuditEvent[]> {
  await flushAudit(db);
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
