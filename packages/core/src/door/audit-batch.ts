/**
 * Audit events of door tool calls, written to the wire's activity table in batches: one insert
 * per 50 ms (or per 200 events) instead of one per call, so auditing costs the MCP endpoint
 * little. Like the wire's own audit writes, a failure is logged and never fails the call.
 *
 * @see agent/audit.ts (same table and row shape), docs/door.md "The MCP endpoint"
 */
import type { Kysely } from 'kysely';
import { describeError, type Logger } from '../http/logger.js';
import type { Database } from '../store/database.js';

const FLUSH_AFTER_MS = 50;
const FLUSH_AT_EVENTS = 200;

export interface AuditBatcher {
  record(owner: string, kind: string, data: Record<string, unknown>): void;
  /** Writes whatever is queued (tests, shutdown). */
  flush(): Promise<void>;
}

export function createAuditBatcher(db: Kysely<Database>, logger: Logger): AuditBatcher {
  let queue: Array<{ owner: string; kind: string; data: string }> = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> = Promise.resolve();

  const flush = (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    const rows = queue;
    queue = [];
    if (rows.length === 0) return writing;
    writing = writing.then(async () => {
      try {
        await db.insertInto('wire_audit_events').values(rows).execute();
      } catch (error) {
        logger.warn('door.audit_failed', { events: rows.length, ...describeError(error) });
      }
    });
    return writing;
  };

  return {
    record(owner, kind, data) {
      queue.push({ owner, kind, data: JSON.stringify(data) });
      if (queue.length >= FLUSH_AT_EVENTS) {
        void flush();
      } else if (!timer) {
        timer = setTimeout(() => void flush(), FLUSH_AFTER_MS);
        timer.unref?.();
      }
    },
    flush,
  };
}
