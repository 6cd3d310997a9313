/**
 * One turn in flight on this instance: the chunks it has streamed (for any number of readers,
 * joining at any point), its stop (a flag and an abort signal), the pause at a parked approval,
 * and the write-behind of its chunks to the store so readers on other instances, and readers
 * after a restart of this one, can resume too.
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import type { Kysely } from 'kysely';
import { retryWhileUnavailable } from '../store/availability.js';
import type { Database, RunStatus } from '../store/database.js';
import { CHAT_RUN, type Principal, type RunContext } from './tools.js';

/** How far behind the stream chunks reach the store. */
const FLUSH_DELAY_MS = 20;

/**
 * How long a run's writes (its chunks, its message, its end) are tried again while the store is
 * away: a blink (an embedded store's thread starting again, a failover) loses none of them.
 */
export const RUN_WRITE_RETRY_MS = 10_000;

export interface SequencedChunk {
  seq: number;
  chunk: UIMessageChunk;
}

/**
 * The chunk a run emits when it pauses for a decision (every call of the step parked or done):
 * readers end their stream on it, so the AI SDK client's `sendAutomaticallyWhen` can fire, and
 * a client resumes after `resumeAfter`, its own sequence number.
 */
export function pauseMarker(threadId: string, runId: string, seq: number): UIMessageChunk {
  return {
    type: 'message-metadata',
    messageMetadata: { threadId, runId, status: 'awaiting_approval', resumeAfter: seq },
  };
}

export function isPauseMarker(chunk: UIMessageChunk | undefined): boolean {
  if (chunk?.type !== 'message-metadata') return false;
  const metadata = chunk.messageMetadata as { status?: unknown; resumeAfter?: unknown } | undefined;
  return metadata?.status === 'awaiting_approval' && typeof metadata.resumeAfter === 'number';
}

export class LiveRun {
  readonly chunks: UIMessageChunk[] = [];
  status: RunStatus = 'running';
  finished = false;
  stopRequested = false;
  stopReason: string | null = null;
  /** Readers attached on this instance right now, and when the last one left. */
  attached = 0;
  detachedAt = Date.now();
  /** Where the run came from (a chat turn, or an automation's trigger). */
  origin: RunContext = CHAT_RUN;
  /** The user's own credentials for host APIs (present mode), kept in memory only. */
  credentials: { headers: Record<string, string> } | null = null;
  /** The thread's messages when already known (a new thread), saving a read. */
  knownHistory: UIMessage[] | null = null;
  /** Host tool calls in progress (parked ones included). */
  calls = 0;
  /** Parked tool calls waiting for a decision. */
  parked = 0;
  /** Tool calls denied, or dropped by a stop (their error is reported to the client as a denial). */
  readonly refused = new Set<string>();
  /** The user's decisions, by approval id, as the stored message's tool parts keep them. */
  readonly decisions = new Map<string, { approved: boolean; reason?: string }>();
  /** Resolves when a stop is requested. */
  readonly stopSignal: Promise<void>;
  #resolveStop!: () => void;
  /** Aborted by a stop: ends the model's stream at once (tool calls already running drain). */
  readonly #abort = new AbortController();
  #wakers = new Set<() => void>();
  #inputSeen = new Map<string, () => void>();
  #inputSeenIds = new Set<string>();
  #inputStarted = new Map<string, () => void>();
  #inputStartedIds = new Set<string>();
  #pending: SequencedChunk[] = [];
  #flushing: Promise<void> | null = null;
  #flushTimer: ReturnType<typeof setTimeout> | null = null;
  #writeFailed = false;

  constructor(
    readonly id: string,
    readonly principal: Principal,
    readonly threadId: string,
    private readonly db: Kysely<Database>,
    private readonly onWriteError: (error: unknown) => void,
  ) {
    this.stopSignal = new Promise((resolve) => {
      this.#resolveStop = resolve;
    });
  }

  get owner(): string {
    return this.principal.subject;
  }

  get abortSignal(): AbortSignal {
    return this.#abort.signal;
  }

  /** Waiting for a decision with nothing else going on: every call in progress is parked. */
  get paused(): boolean {
    return this.parked > 0 && this.calls === this.parked && !this.stopRequested && !this.finished;
  }

  /** Emits the pause marker, unless the last chunk already is one (nothing happened since). */
  markPaused(): void {
    if (!this.paused || isPauseMarker(this.chunks.at(-1))) return;
    this.emit(pauseMarker(this.threadId, this.id, this.chunks.length + 1));
  }

  /** Whether the stream has announced a tool call (its `tool-input-*` chunk). */
  hasToolInput(toolCallId: string): boolean {
    return this.#inputSeenIds.has(toolCallId);
  }

  /** Appends a chunk: readers see it at once; the store within a flush. */
  emit(chunk: UIMessageChunk): void {
    this.chunks.push(chunk);
    this.#pending.push({ seq: this.chunks.length, chunk });
    if (chunk.type === 'tool-input-start') {
      this.#inputStartedIds.add(chunk.toolCallId);
      this.#inputStarted.get(chunk.toolCallId)?.();
    }
    if (chunk.type === 'tool-input-available' || chunk.type === 'tool-input-error') {
      this.#inputSeenIds.add(chunk.toolCallId);
      this.#inputSeen.get(chunk.toolCallId)?.();
    }
    this.#wake();
    // Chunks are written a few milliseconds behind, many per insert: readers here never wait for
    // the store, and the store is not hit once per token.
    if (!this.#flushing && !this.#flushTimer) {
      this.#flushTimer = setTimeout(() => this.#startFlush(), FLUSH_DELAY_MS);
    }
  }

  requestStop(reason: string): boolean {
    if (this.stopRequested) return false;
    this.stopRequested = true;
    this.stopReason = reason;
    this.#resolveStop();
    this.#abort.abort();
    this.#wake();
    return true;
  }

  /** Marks the run over and wakes every reader, after the last chunk reached the store. */
  async finish(status: RunStatus): Promise<void> {
    this.status = status;
    await this.flushed();
    this.finished = true;
    this.#wake();
  }

  /** Waits until the stream has announced a tool call (so an approval request follows it). */
  toolInputSeen(toolCallId: string, timeoutMs = 5000): Promise<void> {
    return waitFor(this.#inputSeenIds, this.#inputSeen, toolCallId, timeoutMs);
  }

  /** Waits until the stream has opened a tool call's input (so a preview painted from it follows it). */
  toolInputStarted(toolCallId: string, timeoutMs = 5000): Promise<void> {
    if (this.#inputSeenIds.has(toolCallId)) return Promise.resolve();
    return waitFor(this.#inputStartedIds, this.#inputStarted, toolCallId, timeoutMs);
  }

  /** Resolves at the next chunk, stop or finish (or when `signal` aborts). */
  changed(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#wakers.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.#wakers.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Writes every chunk emitted so far to the store (now, not after the delay). */
  async flushed(): Promise<void> {
    if (this.#flushTimer) this.#startFlush();
    while (this.#flushing) await this.#flushing;
  }

  #startFlush(): void {
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    // Cleared when the flush settles, never inside it: a flush with nothing to await (writes
    // already failed) completes before this assignment, and `flushed()` would wait on it forever.
    if (!this.#flushing) {
      this.#flushing = this.#flush().finally(() => {
        this.#flushing = null;
      });
    }
  }

  #wake(): void {
    for (const wake of [...this.#wakers]) wake();
  }

  async #flush(): Promise<void> {
    // Chunks that arrive while one insert is in flight go out together in the next.
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, 500);
      if (this.#writeFailed) continue;
      try {
        // Tried again while the store is briefly away: a gap would end every later chunk's way
        // to the store (readers there wait at a gap), so one lost batch would lose the rest.
        await retryWhileUnavailable(
          () =>
            this.db
              .insertInto('wire_run_chunks')
              .values(batch.map((c) => ({ run_id: this.id, seq: c.seq, chunk: JSON.stringify(c.chunk) })))
              .onConflict((oc) => oc.columns(['run_id', 'seq']).doNothing())
              .execute(),
          RUN_WRITE_RETRY_MS,
        );
      } catch (error) {
        // The thread was deleted under the run, or the store stayed away: readers here still get
        // every chunk from memory; only resuming elsewhere is lost.
        this.#writeFailed = true;
        this.onWriteError(error);
      }
    }
  }
}

/** Resolves once `id` is in `seen` (its waiter in `waiters` is called then), or after `timeoutMs`. */
function waitFor(
  seen: Set<string>,
  waiters: Map<string, () => void>,
  id: string,
  timeoutMs: number,
): Promise<void> {
  if (seen.has(id)) return Promise.resolve();
  return new Promise((resolve) => {
    const earlier = waiters.get(id);
    const timer = setTimeout(done, timeoutMs);
    function done() {
      clearTimeout(timer);
      if (waiters.get(id) === done) waiters.delete(id);
      earlier?.();
      resolve();
    }
    waiters.set(id, done);
  });
}
