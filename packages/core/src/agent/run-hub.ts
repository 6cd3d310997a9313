/**
 * Runs: every turn is one. The hub starts turns (and regenerates the last answer), lets any
 * number of readers follow a run from any point (here from memory, on another instance from the
 * store), and stops runs: at once on this instance, within a second on the instance that runs
 * them.
 *
 * A run keeps going when its reader leaves. It ends early only on an explicit stop, or when
 * nobody has read it for `resumeWindowMs` (it is then cancelled as `abandoned`). A run paused for
 * a decision ends its readers' streams at its pause marker; they resume after it.
 *
 * @see docs/wire.md "Runs"
 */
import type { UIMessage, UIMessageChunk } from 'ai';
import { type ExpressionBuilder, type Kysely, sql, type UpdateQueryBuilder, type UpdateResult } from 'kysely';
import { describeError, type Logger } from '../http/logger.js';
import { retryWhileUnavailable, unlessUnavailable } from '../store/availability.js';
import type { Database, RunStatus } from '../store/database.js';
import { after, exactCreatedAt, type ListPosition, type Page, pageOf } from '../store/keyset.js';
import type { ApprovalStore } from './approvals.js';
import { newId } from './ids.js';
import { isPauseMarker, LiveRun, RUN_WRITE_RETRY_MS, type SequencedChunk } from './live-run.js';
import { RunError } from './run-error.js';
import { followStoredRun, isTerminal, type RunView, viewOf } from './run-rows.js';
import { type ThreadStore, titleFrom } from './threads.js';
import { chatRunOf, type Principal, type RunContext } from './tools.js';
import { runTurn, type TurnDeps } from './turn.js';

/** The update that ends runs whose instance is gone, narrowed by the caller. */
type OrphanQuery = UpdateQueryBuilder<Database, 'wire_runs', 'wire_runs', UpdateResult>;

/** Which runs `GET /runs` lists. */
export interface RunFilter {
  limit: number;
  threadId?: string;
  automationId?: string;
  /** The principal the run ran as (`service:webhook:github`, or a user's subject). */
  owner?: string;
  status?: RunStatus;
  cursor?: ListPosition;
}

/** Runs a subject may see: those that ran as them, and those that answer to them. */
function visibleTo(subject: string) {
  return (eb: ExpressionBuilder<Database, 'wire_runs'>) =>
    eb.or([eb('owner', '=', subject), eb('actor', '=', subject)]);
}

export interface RunHubOptions {
  resumeWindowMs: number;
}

/** A live run touches its row this often (and learns of stops made elsewhere). */
const TOUCH_MS = 1000;
/** A run row untouched this long belongs to an instance that is gone. */
const STALE_MS = 30_000;

/**
 * Tries at writing a thread's new run while others are in its way: each try after the first
 * follows a run that ended (or was taken over) between the refused write and the look at it.
 */
const CLAIM_ATTEMPTS = 5;
/** Every instance looks this often for runs whose instance is gone, and ends them. */
const SWEEP_MS = 2000;
/** Postgres's code for an insert whose referenced row is gone. */
const FOREIGN_KEY_VIOLATION = '23503';
/** Finished runs stay in memory this long for readers here; later ones read the store. */
const KEEP_FINISHED_MS = 60_000;

export class RunHub {
  readonly #live = new Map<string, LiveRun>();
  readonly #shutdown = new AbortController();
  readonly #running = new Set<Promise<void>>();
  /** Set by `close`: new turns are refused (503 on the wire) while those in flight finish. */
  #closing = false;
  readonly #sweeper: ReturnType<typeof setInterval>;
  /** Whether the last sweep reached the store (only then does the next one judge others dead). */
  #storeSeen = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly threads: ThreadStore,
    private readonly approvals: ApprovalStore,
    private readonly turnDeps: Omit<TurnDeps, 'shutdown' | 'setStatus'>,
    private readonly logger: Logger,
    private readonly options: RunHubOptions,
  ) {
    this.#sweeper = setInterval(() => void this.#sweep(), SWEEP_MS);
    this.#sweeper.unref?.();
  }

  /**
   * Starts a turn on a thread (created when new) with the user's message. A message whose id
   * names one of the thread's user messages is an edit: that message and everything after it
   * are replaced by it (useChat's `sendMessage({ text, messageId })`). Refuses with
   * `run_in_flight` while another run of the thread is going, and with `message_id_taken` when
   * the id names a message of the assistant's.
   */
  async startTurn(
    principal: Principal,
    threadId: string,
    userMessage: UIMessage,
    credentials: { headers: Record<string, string> } | null = null,
    origin: RunContext = chatRunOf(principal),
  ): Promise<LiveRun> {
    this.#refuseWhileClosing();
    const runId = newId('run');
    const seq = await this.#claim(principal.subject, threadId, () =>
      this.#begin(principal.subject, threadId, runId, userMessage, origin),
    );
    // The first message of a thread is its whole history: no need to read it back.
    const history = seq === 1 ? [userMessage] : null;
    return this.#launch(principal, threadId, runId, credentials, history, origin);
  }

  /** Whether new runs are refused (the service is closing). */
  get closing(): boolean {
    return this.#closing;
  }

  /**
   * Runs the turn again without its answer: the thread's last message, when it is the
   * assistant's, is removed, and a new turn answers the history before it (a thread that ends
   * with the user's message gets that answered again). `messageId`, when given, must be the
   * thread's last message. Refuses with `run_in_flight` while a run is going.
   */
  async regenerate(
    principal: Principal,
    threadId: string,
    messageId: string | undefined,
    credentials: { headers: Record<string, string> } | null = null,
  ): Promise<LiveRun> {
    this.#refuseWhileClosing();
    const owner = principal.subject;
    const runId = newId('run');
    await this.#claim(owner, threadId, () =>
      this.db.transaction().execute(async (trx) => {
        // The run first: a turn in flight refuses the whole request before anything else is looked at.
        await trx
          .insertInto('wire_runs')
          .columns(['id', 'owner', 'thread_id', 'status'])
          .expression((eb) =>
            eb
              .selectFrom('wire_threads')
              .select([eb.val(runId).as('id'), 'owner', 'id as thread_id', eb.val('running').as('status')])
              .where('owner', '=', owner)
              .where('id', '=', threadId),
          )
          .execute();
        const last = await trx
          .selectFrom('wire_messages')
          .select(['seq', 'id', 'role'])
          .where('owner', '=', owner)
          .where('thread_id', '=', threadId)
          .orderBy('seq', 'desc')
          .limit(1)
          .executeTakeFirst();
        if (!last) throw new RunError('not_found', 'No such thread.');
        if (messageId !== undefined && last.id !== messageId) {
          throw new RunError(
            'regenerate_not_last',
            `Only the thread's last message can be regenerated, and ${messageId} is not it (${last.id} is). ` +
              'Regenerate without a messageId to answer the last message again, or send a new message.',
          );
        }
        if (last.role === 'assistant') {
          await trx
            .deleteFrom('wire_messages')
            .where('owner', '=', owner)
            .where('thread_id', '=', threadId)
            .where('seq', '=', last.seq)
            .execute();
        }
        await trx
          .updateTable('wire_threads')
          .set({ updated_at: new Date() })
          .where('owner', '=', owner)
          .where('id', '=', threadId)
          .execute();
      }),
    );
    return this.#launch(principal, threadId, runId, credentials, null, chatRunOf(principal));
  }

  #refuseWhileClosing(): void {
    if (this.#closing) throw new RunError('stopping', 'The service is stopping; try again shortly.');
  }

  #launch(
    principal: Principal,
    threadId: string,
    runId: string,
    credentials: { headers: Record<string, string> } | null,
    knownHistory: UIMessage[] | null,
    origin: RunContext,
  ): LiveRun {
    const run = new LiveRun(runId, principal, threadId, this.db, (error) => {
      // The thread was deleted under the run (its row went with it): nothing is to be kept.
      if ((error as { code?: string }).code === FOREIGN_KEY_VIOLATION) return;
      this.logger.warn('run chunks not stored', { run_id: runId, ...describeError(error) });
    });
    run.knownHistory = knownHistory;
    run.credentials = credentials;
    run.origin = origin;
    this.#live.set(runId, run);
    this.turnDeps.audit.record(principal.subject, 'run.started', { runId, threadId });
    const task = this.#execute(run).finally(() => this.#running.delete(task));
    this.#running.add(task);
    return run;
  }

  /** The run, when `subject` may see it: it ran as them, or answers to them (`actor`). */
  async getRun(subject: string, runId: string): Promise<RunView | null> {
    const row = await this.db
      .selectFrom('wire_runs')
      .selectAll()
      .where(visibleTo(subject))
      .where('id', '=', runId)
      .executeTakeFirst();
    return row ? viewOf(row) : null;
  }

  /** The user message a run answered: the first of its thread (automation runs own theirs). */
  async firstUserMessage(owner: string, threadId: string): Promise<UIMessage | null> {
    const row = await this.db
      .selectFrom('wire_messages')
      .select('message')
      .where('owner', '=', owner)
      .where('thread_id', '=', threadId)
      .where('role', '=', 'user')
      .orderBy('seq')
      .limit(1)
      .executeTakeFirst();
    return (row?.message as UIMessage | undefined) ?? null;
  }

  async latestRun(owner: string, threadId: string): Promise<RunView | null> {
    const row = await this.db
      .selectFrom('wire_runs')
      .selectAll()
      .where('owner', '=', owner)
      .where('thread_id', '=', threadId)
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row ? viewOf(row) : null;
  }

  /** The thread's run in flight (running or awaiting approval), or null. */
  async inFlightRun(owner: string, threadId: string): Promise<RunView | null> {
    const row = await this.db
      .selectFrom('wire_runs')
      .selectAll()
      .where('owner', '=', owner)
      .where('thread_id', '=', threadId)
      .where('status', 'in', ['running', 'awaiting_approval'])
      .executeTakeFirst();
    return row ? viewOf(row) : null;
  }

  /** How many chunks the run has streamed so far (here from memory, else from the store). */
  async chunkCount(runId: string): Promise<number> {
    const live = this.#live.get(runId);
    if (live) return live.chunks.length;
    const row = await this.db
      .selectFrom('wire_run_chunks')
      .select((eb) => eb.fn.max('seq').as('last'))
      .where('run_id', '=', runId)
      .executeTakeFirst();
    return Number(row?.last ?? 0);
  }

  /**
   * The runs `subject` may see, newest first, narrowed by the filters, after the position `cursor`
   * names (a page's cursor).
   */
  async listRuns(subject: string, filter: RunFilter): Promise<Page<RunView>> {
    let query = this.db
      .selectFrom('wire_runs')
      .selectAll()
      .select(exactCreatedAt.as('cursor_at'))
      .where(visibleTo(subject))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(filter.limit + 1);
    if (filter.threadId) query = query.where('thread_id', '=', filter.threadId);
    if (filter.automationId) query = query.where('automation_id', '=', filter.automationId);
    if (filter.owner) query = query.where('owner', '=', filter.owner);
    if (filter.status) query = query.where('status', '=', filter.status);
    if (filter.cursor) query = query.where(after(filter.cursor));
    return pageOf(await query.execute(), filter.limit, viewOf);
  }

  /**
   * The run's chunks after `after`, as they come, until the run ends or `signal` aborts.
   * Each chunk is delivered once per reader, in order.
   */
  async *follow(runId: string, after: number, signal: AbortSignal): AsyncGenerator<SequencedChunk> {
    const live = this.#live.get(runId);
    if (live) {
      yield* this.#followLive(live, after, signal);
      return;
    }
    yield* followStoredRun(this.db, runId, after, signal, {
      liveRun: (from) => {
        const run = this.#live.get(runId);
        return run ? this.#followLive(run, from, signal) : null;
      },
      awaitingDecision: () => this.approvals.hasPending(runId),
    });
  }

  /**
   * Asks a run to stop: the step in progress finishes, running tool calls drain, parked
   * approvals are dropped, and the run ends `cancelled`. Stopping a finished run changes
   * nothing. Returns the run, or null when `subject` may not see such a run.
   */
  async stop(subject: string, runId: string, reason = 'user'): Promise<RunView | null> {
    await this.#requestStop(subject, runId, reason);
    return this.getRun(subject, runId);
  }

  /**
   * Stops the thread's run in flight; returns it, or null when none was in flight. A run that
   * ended between the read and the stop was not in flight: null, not that run as it ended.
   */
  async stopInFlight(owner: string, threadId: string, reason = 'user'): Promise<RunView | null> {
    const found = await this.inFlightRun(owner, threadId);
    if (!found) return null;
    const accepted = await this.#requestStop(owner, found.id, reason);
    const run = await this.getRun(owner, found.id);
    // Not accepted yet still in flight: a stop asked before, which this one repeats.
    return run && (accepted || !isTerminal(run.status)) ? run : null;
  }

  /** Flags the run stopped when it is in flight and not stopped yet; whether it was. */
  async #requestStop(subject: string, runId: string, reason: string): Promise<boolean> {
    const updated = await this.db
      .updateTable('wire_runs')
      .set({ stop_requested_at: new Date(), stop_reason: reason })
      .where(visibleTo(subject))
      .where('id', '=', runId)
      .where('status', 'in', ['running', 'awaiting_approval'])
      .where('stop_requested_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    if (updated) {
      this.#live.get(runId)?.requestStop(reason);
      await this.approvals.dropForRun(runId);
      this.turnDeps.audit.record(subject, 'run.stop_requested', { runId, reason });
    }
    // A run whose instance is gone has nobody to act on the stop: it ends here, cancelled.
    if (!this.#live.has(runId)) await this.#endOrphans((q) => q.where('id', '=', runId));
    return updated !== undefined;
  }

  /** Stops every run of a thread in flight (before the thread is deleted). */
  async stopThread(owner: string, threadId: string, reason: string): Promise<void> {
    const rows = await this.db
      .selectFrom('wire_runs')
      .select('id')
      .where('owner', '=', owner)
      .where('thread_id', '=', threadId)
      .where('status', 'in', ['running', 'awaiting_approval'])
      .execute();
    for (const row of rows) await this.stop(owner, row.id, reason);
  }

  /** Counts the readers of a live run on this instance (the abandonment clock). */
  attach(runId: string): () => void {
    const run = this.#live.get(runId);
    if (!run) return () => {};
    run.attached++;
    return () => {
      run.attached--;
      run.detachedAt = Date.now();
    };
  }

  /**
   * Stops taking turns; lets those in flight finish for up to `graceMs` (a deploy should not cut
   * an answer short), then stops the rest and waits for them to wind down.
   */
  async close(options: { graceMs?: number } = {}): Promise<void> {
    this.#closing = true;
    clearInterval(this.#sweeper);
    if (options.graceMs && this.#running.size > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled([...this.#running]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, options.graceMs);
        }),
      ]);
      clearTimeout(timer);
    }
    for (const run of this.#live.values()) if (!run.finished) run.requestStop('shutdown');
    this.#shutdown.abort();
    await Promise.allSettled([...this.#running]);
  }

  /**
   * Creates the thread (when new), the run and the user's message in one statement: a turn's
   * first store round trip is also its only one before the model is called. A run already in
   * flight on the thread fails it as a whole (unique index), leaving nothing behind. A message
   * whose id is a user message's of the thread replaces it and drops what followed it (an
   * edit); one whose id is another role's is not stored, and the run it began is removed.
   */
  async #begin(
    owner: string,
    threadId: string,
    runId: string,
    message: UIMessage,
    origin: RunContext,
  ): Promise<number> {
    const result = await sql<{ seq: number }>`
          with thread as (
            insert into wire_threads (owner, id, title) values (${owner}, ${threadId}, ${titleFrom(message)})
            on conflict (owner, id) do update set updated_at = now(),
              -- An edit of the thread's first message renames it: the title is that message's text.
              title = case when exists (
                select 1 from wire_messages first
                where first.owner = ${owner} and first.thread_id = ${threadId}
                  and first.id = ${message.id} and first.role = 'user'
                  and first.seq = (select min(seq) from wire_messages
                                   where owner = ${owner} and thread_id = ${threadId})
              ) then excluded.title else wire_threads.title end
            returning owner, id
          ), run as (
            insert into wire_runs (id, owner, thread_id, status, automation_id, actor, trigger)
            select ${runId}, owner, id, 'running', ${origin.automationId}, ${origin.actor}, ${origin.trigger}
            from thread
            returning id
          ), target as (
            select seq, role from wire_messages
            where owner = ${owner} and thread_id = ${threadId} and id = ${message.id}
            order by seq limit 1
          ), edited as (
            delete from wire_messages
            where owner = ${owner} and thread_id = ${threadId}
              and seq >= (select seq from target where role = 'user')
          )
          insert into wire_messages (owner, thread_id, seq, id, role, message)
          select owner, id,
            (select coalesce(max(seq), 0) + 1 from wire_messages where owner = ${owner} and thread_id = ${threadId}),
            ${message.id}, ${message.role}, ${JSON.stringify(message)}::jsonb
          from thread
          where not exists (select 1 from target where role <> 'user')
          returning seq`.execute(this.db);
    const seq = result.rows[0]?.seq;
    if (seq !== undefined) return seq;
    await this.db.deleteFrom('wire_runs').where('id', '=', runId).execute();
    throw new RunError(
      'message_id_taken',
      `The message id ${message.id} is the assistant's message of this thread: send the user's message with an id of its own (or none).`,
    );
  }

  /**
   * Runs `insert`, which writes the thread's new run. When the thread has a run in flight (the
   * unique index refuses the insert), a run left by an instance that died is taken over and the
   * insert tried again; a live one refuses with `run_in_flight`, naming the run found in the way
   * (one look: a second could find it ended and name none).
   */
  async #claim<T>(owner: string, threadId: string, insert: () => Promise<T>): Promise<T> {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      try {
        return await insert();
      } catch (error) {
        if ((error as { code?: string }).code !== '23505') throw error;
        const reaped = await this.#endOrphans((q) =>
          q.where('owner', '=', owner).where('thread_id', '=', threadId),
        );
        // Nothing reaped here may still mean nothing in flight: the sweep (this instance's or
        // another's) ended the orphan first, or the run in the way ended meanwhile. Try again.
        if (reaped > 0) continue;
        const inTheWay = await this.inFlightRun(owner, threadId);
        if (inTheWay) throw this.#inFlightRefusal(threadId, inTheWay);
      }
    }
    // Runs that kept starting and ending in the gaps between the tries.
    throw this.#inFlightRefusal(threadId, await this.inFlightRun(owner, threadId));
  }

  /**
   * Ends the runs in flight, among those `narrow` picks, whose instance is gone (their row
   * untouched for `STALE_MS`; a live run here is never one): `cancelled` when a stop was asked,
   * else `failed` (`instance_lost`). Their approvals still pending, or approved but never run,
   * are dropped, so no poller waits on them. Readers following them from the store end. Returns
   * how many were ended.
   */
  async #endOrphans(narrow: (query: OrphanQuery) => OrphanQuery = (query) => query): Promise<number> {
    const live = [...this.#live.values()].filter((run) => !run.finished).map((run) => run.id);
    let query: OrphanQuery = this.db
      .updateTable('wire_runs')
      .set({
        status: sql<RunStatus>`case when stop_requested_at is not null then 'cancelled' else 'failed' end`,
        error_code: sql<
          string | null
        >`case when stop_requested_at is not null then null else 'instance_lost' end`,
        error_message: sql<
          string | null
        >`case when stop_requested_at is not null then null else 'The server running this turn stopped.' end`,
        ended_at: new Date(),
      })
      .where('status', 'in', ['running', 'awaiting_approval'])
      .where('updated_at', '<', new Date(Date.now() - STALE_MS));
    if (live.length > 0) query = query.where('id', 'not in', live);
    const ended = await narrow(query).returning(['id', 'owner', 'status']).execute();
    for (const run of ended) {
      await this.approvals.dropForLostRun(run.id);
      this.turnDeps.audit.record(run.owner, 'run.finished', { runId: run.id, status: run.status });
    }
    return ended.length;
  }

  /**
   * One sweep for runs whose instance is gone. After a sweep that could not reach the store,
   * the next one only looks: once the store is back, every live instance has touched its runs
   * (each second) before any is judged gone.
   */
  async #sweep(): Promise<void> {
    const steady = this.#storeSeen;
    this.#storeSeen = false;
    try {
      if (steady) await this.#endOrphans();
      else await sql`select 1`.execute(this.db);
      this.#storeSeen = true;
    } catch (error) {
      this.logger.warn('sweep for runs of lost instances failed', describeError(error));
    }
  }

  #inFlightRefusal(threadId: string, run: RunView | null): RunError {
    const name = run ? ` (${run.id})` : '';
    const stop = `stop it with POST /threads/${threadId}/stop`;
    const message =
      run?.status === 'awaiting_approval'
        ? `This thread's turn${name} is waiting for an approval: answer it (POST /approvals/:id/decide, or the AI SDK's addToolApprovalResponse), or ${stop}, then send again.`
        : `This thread already has a turn in flight${name}: resume its stream with GET /threads/${threadId}/stream, or ${stop}, then send again.`;
    return new RunError('run_in_flight', message, run?.id);
  }

  async #execute(run: LiveRun): Promise<void> {
    const watchdog = setInterval(() => void this.#touch(run), TOUCH_MS);
    watchdog.unref?.();
    try {
      const outcome = await runTurn(run, {
        ...this.turnDeps,
        shutdown: this.#shutdown.signal,
        setStatus: (r, status) => this.#setStatus(r, status),
      });
      // The message and the run's end are written again while the store is briefly away: lost,
      // the thread would miss its answer, and keep a run in flight that refuses the next turn.
      if (outcome.message) {
        const message = outcome.message;
        await retryWhileUnavailable(
          () => this.threads.append(run.owner, run.threadId, run.id, message),
          RUN_WRITE_RETRY_MS,
        ).catch((error: unknown) => {
          this.logger.warn('assistant message not stored', { run_id: run.id, ...describeError(error) });
        });
      }
      await run.flushed();
      // A stop accepted while the run was in flight (on any instance) ends it cancelled, even
      // when it landed after this instance last looked.
      const endedAt = new Date();
      const stored = await retryWhileUnavailable(
        () =>
          this.db
            .updateTable('wire_runs')
            .set({
              status: sql<RunStatus>`case when stop_requested_at is not null then 'cancelled' else ${outcome.status} end`,
              error_code: outcome.errorCode ?? null,
              error_message: outcome.errorMessage ?? null,
              stop_reason: sql<string | null>`coalesce(stop_reason, ${run.stopReason})`,
              ended_at: endedAt,
              updated_at: endedAt,
            })
            .where('id', '=', run.id)
            .returning(['status', 'stop_reason'])
            .executeTakeFirst(),
        RUN_WRITE_RETRY_MS,
      ).catch((error: unknown) => {
        this.logger.warn('run status not stored', { run_id: run.id, ...describeError(error) });
        return undefined;
      });
      const status = stored?.status ?? outcome.status;
      if (status === 'cancelled') {
        run.requestStop(stored?.stop_reason ?? run.stopReason ?? 'user');
        await this.approvals.dropForRun(run.id).catch(() => {});
      }
      this.turnDeps.audit.record(run.owner, 'run.finished', { runId: run.id, status });
      await run.finish(status);
    } finally {
      clearInterval(watchdog);
      const forget = setTimeout(() => this.#live.delete(run.id), KEEP_FINISHED_MS);
      forget.unref?.();
    }
  }

  async #setStatus(run: LiveRun, status: 'running' | 'awaiting_approval'): Promise<void> {
    run.status = status;
    await this.db
      .updateTable('wire_runs')
      .set({ status, updated_at: new Date() })
      .where('id', '=', run.id)
      .where('status', 'in', ['running', 'awaiting_approval'])
      .execute();
  }

  /** Keeps the row fresh, picks up stops made on other instances, and ends abandoned runs. */
  async #touch(run: LiveRun): Promise<void> {
    if (run.finished) return;
    try {
      const row = await this.db
        .updateTable('wire_runs')
        .set({ updated_at: new Date() })
        .where('id', '=', run.id)
        .returning(['stop_requested_at', 'stop_reason', 'watched_at'])
        .executeTakeFirst();
      if (!row) {
        run.requestStop('thread_deleted');
        return;
      }
      if (row.stop_requested_at) run.requestStop(row.stop_reason ?? 'user');
      const lastRead = Math.max(run.detachedAt, new Date(row.watched_at).getTime());
      // Only a chat turn has a reader to lose; an automation's run has none by design.
      if (
        run.origin.trigger === 'chat' &&
        run.attached === 0 &&
        run.parked === 0 &&
        Date.now() - lastRead > this.options.resumeWindowMs &&
        !run.stopRequested
      ) {
        await this.stop(run.owner, run.id, 'abandoned');
      }
    } catch (error) {
      this.logger.warn('run watchdog failed', { run_id: run.id, ...describeError(error) });
    }
  }

  async *#followLive(run: LiveRun, after: number, signal: AbortSignal): AsyncGenerator<SequencedChunk> {
    let next = after;
    while (!signal.aborted) {
      while (next < run.chunks.length) {
        next++;
        yield { seq: next, chunk: run.chunks[next - 1] as UIMessageChunk };
        if (signal.aborted) return;
      }
      if (run.finished) return;
      if (next > after && (await this.#pausedAt(run, next))) return;
      // Chunks that came in while the store was asked are read at once, not at the next one.
      if (next < run.chunks.length || run.finished) continue;
      await run.changed(signal);
    }
  }

  /**
   * Whether a reader that delivered chunk `seq` ends there: it is the pause marker, still the
   * run's last chunk, and the run still waits (a decision made on another instance shows in the
   * store before this instance learns of it). The marker is in the store first, so a client may
   * resume after it on any instance.
   */
  async #pausedAt(run: LiveRun, seq: number): Promise<boolean> {
    if (!isPauseMarker(run.chunks[seq - 1]) || !run.paused) return false;
    // With the store away no instance can record a decision: the run's own pause stands.
    if (!(await this.approvals.hasPending(run.id).catch(unlessUnavailable(true)))) return false;
    await run.flushed();
    return seq === run.chunks.length;
  }
}
