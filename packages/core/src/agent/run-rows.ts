/**
 * Run rows as the wire shows them, and reading a run's chunks back from the store: how a reader
 * on another instance (or after a restart) follows a run it is not running.
 */
import type { UIMessageChunk } from 'ai';
import type { Kysely } from 'kysely';
import { isStoreUnavailable, unlessUnavailable } from '../store/availability.js';
import type { Database, RunStatus, RunTrigger } from '../store/database.js';
import { isPauseMarker, type SequencedChunk } from './live-run.js';

export interface RunView {
  id: string;
  threadId: string;
  /** The principal the run ran as: a user's subject, or `service:webhook:<source>`. */
  owner: string;
  /** The person an automation's run answers to (null for a chat turn). */
  actor: string | null;
  automationId: string | null;
  trigger: RunTrigger;
  status: RunStatus;
  stopReason: string | null;
  error: { code: string; message: string } | null;
  createdAt: string;
  endedAt: string | null;
}

const TERMINAL: RunStatus[] = ['completed', 'failed', 'cancelled'];
/** Readers on other instances poll the store this often. */
const REMOTE_POLL_MS = 100;

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL.includes(status);
}

export interface StoredRunFollowers {
  /** A live run here to switch to, when one appears (a reader that joined around a restart). */
  liveRun: (after: number) => AsyncGenerator<SequencedChunk> | null;
  /** Whether the run still waits for a decision (a reader that delivered its pause marker ends). */
  awaitingDecision: () => Promise<boolean>;
}

export async function* followStoredRun(
  db: Kysely<Database>,
  runId: string,
  after: number,
  signal: AbortSignal,
  followers: StoredRunFollowers,
): AsyncGenerator<SequencedChunk> {
  let next = after;
  let watchedAt = 0;
  while (!signal.aborted) {
    let run: { status: RunStatus } | undefined;
    let rows: Array<{ seq: number; chunk: unknown }>;
    try {
      run = await db.selectFrom('wire_runs').select('status').where('id', '=', runId).executeTakeFirst();
      rows = await db
        .selectFrom('wire_run_chunks')
        .select(['seq', 'chunk'])
        .where('run_id', '=', runId)
        .where('seq', '>', next)
        .orderBy('seq')
        .execute();
    } catch (error) {
      // The store is briefly away (a failover, the embedded store's thread starting again): the
      // reader waits for it as for the run's next chunk, its stream kept open by its heartbeat.
      if (!isStoreUnavailable(error)) throw error;
      await sleep(REMOTE_POLL_MS, signal);
      continue;
    }
    let last: UIMessageChunk | undefined;
    for (const row of rows) {
      if (row.seq !== next + 1) break; // a gap: wait for the writer to catch up
      next = row.seq;
      last = row.chunk as UIMessageChunk;
      yield { seq: row.seq, chunk: last };
      if (signal.aborted) return;
    }
    // Chunks are all written before a run is marked over, so this read had the last of them.
    if (!run || isTerminal(run.status)) return;
    // Paused at its marker, the last chunk there is: this reader ends, as one here would.
    if (
      isPauseMarker(last) &&
      next === rows.at(-1)?.seq &&
      (await followers.awaitingDecision().catch(unlessUnavailable(false)))
    )
      return;
    if (Date.now() - watchedAt > 5000) {
      watchedAt = Date.now();
      await db
        .updateTable('wire_runs')
        .set({ watched_at: new Date() })
        .where('id', '=', runId)
        .execute()
        .catch(unlessUnavailable(undefined));
    }
    // A live run here may have started since (a reader joined right after a restart).
    const live = followers.liveRun(next);
    if (live) {
      yield* live;
      return;
    }
    await sleep(REMOTE_POLL_MS, signal);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export function viewOf(row: {
  id: string;
  thread_id: string;
  owner: string;
  actor: string | null;
  automation_id: string | null;
  trigger: RunTrigger;
  status: RunStatus;
  stop_reason: string | null;
  error_code: string | null;
  error_message: string | null;
  created_at: Date;
  ended_at: Date | null;
}): RunView {
  return {
    id: row.id,
    threadId: row.thread_id,
    owner: row.owner,
    actor: row.actor,
    automationId: row.automation_id,
    trigger: row.trigger,
    status: row.status,
    stopReason: row.stop_reason,
    error: row.error_code ? { code: row.error_code, message: row.error_message ?? '' } : null,
    createdAt: new Date(row.created_at).toISOString(),
    endedAt: row.ended_at ? new Date(row.ended_at).toISOString() : null,
  };
}
