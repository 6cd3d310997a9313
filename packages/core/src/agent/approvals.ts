/**
 * Approvals: a tool call that needs a person's yes parks here until it is approved, declined,
 * expires, or its run is stopped (then it is dropped). Decisions may land on any instance: a
 * parked call learns of them at once on its own instance and within a poll interval elsewhere.
 */
import type { Kysely } from 'kysely';
import { isStoreUnavailable } from '../store/availability.js';
import type { ApprovalStatus, Database } from '../store/database.js';
import { DEFAULT_GRANT_TTL_SECONDS, type GrantStore } from './grants.js';
import { newId } from './ids.js';
import type { Grant, GrantScope } from './tools.js';

/** How a parked call ended. */
export type ApprovalOutcome = 'approved' | 'declined' | 'expired' | 'dropped';

export interface RememberOption {
  scope: GrantScope;
  ttlSeconds: number;
}

export interface Decision {
  id: string;
  decision: 'approve' | 'deny';
  remember?: RememberOption;
  /** Why the user denied the call (the AI SDK's approval response carries one): the model reads it. */
  reason?: string;
}

type ApprovalRow = {
  id: string;
  run_id: string;
  thread_id: string;
  tool_call_id: string;
  tool: string;
  input: unknown;
  status: ApprovalStatus;
  grant_id: string | null;
  created_at: Date;
  decided_at: Date | null;
  expires_at: Date;
};

/** What `GET /approvals/:id` answers. */
export interface ApprovalView {
  id: string;
  /** `pending` also covers an approved call still running (then `request` is omitted). */
  status: 'pending' | 'executed' | 'declined' | 'expired' | 'dropped';
  runId: string;
  threadId: string;
  createdAt: string;
  expiresAt: string;
  decidedAt: string | null;
  grantId: string | null;
  request?: { tool: string; toolCallId: string; input: unknown };
}

const POLL_MS = 500;

export class ApprovalStore {
  readonly #waiters = new Map<string, Set<(outcome?: ApprovalOutcome) => void>>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly grants: GrantStore,
    private readonly now: () => number = Date.now,
  ) {}

  async create(input: {
    owner: string;
    runId: string;
    threadId: string;
    toolCallId: string;
    tool: string;
    input: unknown;
    ttlMs: number;
  }): Promise<string> {
    const id = newId('apr');
    await this.db
      .insertInto('wire_approvals')
      .values({
        id,
        owner: input.owner,
        run_id: input.runId,
        thread_id: input.threadId,
        tool_call_id: input.toolCallId,
        tool: input.tool,
        input: JSON.stringify(input.input ?? null),
        status: 'pending',
        expires_at: new Date(this.now() + input.ttlMs),
      })
      .execute();
    return id;
  }

  async get(owner: string, id: string): Promise<ApprovalView | null> {
    const row = await this.#select(owner).where('id', '=', id).executeTakeFirst();
    return row ? this.#view(row) : null;
  }

  async list(
    owner: string,
    options: { status?: ApprovalView['status']; limit: number },
  ): Promise<ApprovalView[]> {
    let query = this.#select(owner).orderBy('created_at', 'desc').limit(options.limit);
    if (options.status === 'pending') {
      query = query.where('status', '=', 'pending').where('expires_at', '>', new Date(this.now()));
    } else if (options.status === 'expired') {
      query = query.where((eb) =>
        eb.or([
          eb('status', '=', 'expired'),
          eb.and([eb('status', '=', 'pending'), eb('expires_at', '<=', new Date(this.now()))]),
        ]),
      );
    } else if (options.status) {
      query = query.where('status', '=', options.status);
    }
    return (await query.execute()).map((row) => this.#view(row));
  }

  /**
   * Applies a batch of decisions all or nothing: when any approval is unknown to this owner, or
   * no longer pending (decided, expired, dropped), nothing changes and the offending id is named.
   */
  async decide(
    owner: string,
    decisions: Decision[],
  ): Promise<{ ok: true; grants: Grant[] } | { ok: false; reason: 'not_found' | 'not_pending'; id: string }> {
    const result = await this.db.transaction().execute(async (trx) => {
      const ids = decisions.map((d) => d.id);
      const rows = await trx
        .selectFrom('wire_approvals')
        .select(['id', 'status', 'expires_at', 'tool', 'input'])
        .where('owner', '=', owner)
        .where('id', 'in', ids)
        .forUpdate()
        .execute();
      const byId = new Map(rows.map((row) => [row.id, row]));
      for (const decision of decisions) {
        const row = byId.get(decision.id);
        if (!row) return { ok: false as const, reason: 'not_found' as const, id: decision.id };
        if (row.status !== 'pending' || new Date(row.expires_at).getTime() <= this.now()) {
          return { ok: false as const, reason: 'not_pending' as const, id: decision.id };
        }
      }
      const grants: Grant[] = [];
      for (const decision of decisions) {
        const row = byId.get(decision.id)!;
        let grantId: string | null = null;
        if (decision.decision === 'approve' && decision.remember) {
          const grant = await this.grants.create(trx, {
            owner,
            tool: row.tool,
            scope: decision.remember.scope,
            toolInput: row.input,
            ttlSeconds: decision.remember.ttlSeconds || DEFAULT_GRANT_TTL_SECONDS,
            approvalId: row.id,
          });
          grants.push(grant);
          grantId = grant.id;
        }
        await trx
          .updateTable('wire_approvals')
          .set({
            status: decision.decision === 'approve' ? 'approved' : 'declined',
            decided_at: new Date(this.now()),
            grant_id: grantId,
            remember: decision.remember ? JSON.stringify(decision.remember) : null,
            reason: decision.decision === 'deny' ? (decision.reason ?? null) : null,
          })
          .where('id', '=', row.id)
          .execute();
      }
      return { ok: true as const, grants };
    });
    if (result.ok) {
      for (const d of decisions) this.#notify(d.id, d.decision === 'approve' ? 'approved' : 'declined');
    }
    return result;
  }

  /**
   * Waits until the approval is decided, expires, or `stopped()` turns true (then it is
   * dropped). Polls the store so decisions made on other instances are seen too. A store that is
   * briefly away (a failover, the embedded store's thread starting again) does not end the wait:
   * the call waits on, looking again every poll, until its approval's expiry as last read.
   */
  async waitForDecision(
    id: string,
    stopped: () => boolean,
    stopSignal: Promise<void>,
  ): Promise<ApprovalOutcome> {
    /** When the approval expires, as last read from the store. */
    let expiresAt: number | null = null;
    for (;;) {
      let row: { status: ApprovalStatus; expires_at: Date } | undefined;
      try {
        if (stopped()) {
          const dropped = await this.#settle(id, 'dropped');
          if (dropped) return 'dropped';
        }
        row = await this.db
          .selectFrom('wire_approvals')
          .select(['status', 'expires_at'])
          .where('id', '=', id)
          .executeTakeFirst();
      } catch (error) {
        if (!isStoreUnavailable(error) || stopped() || expiresAt === null || this.now() >= expiresAt)
          throw error;
        const decided = await this.#nextEvent(id, POLL_MS, stopSignal);
        if (decided) return decided;
        continue;
      }
      if (!row) return 'dropped';
      expiresAt = new Date(row.expires_at).getTime();
      if (row.status === 'approved') return 'approved';
      if (row.status === 'declined' || row.status === 'expired' || row.status === 'dropped')
        return row.status;
      const left = expiresAt - this.now();
      if (left <= 0) {
        if (await this.#settle(id, 'expired')) return 'expired';
        continue;
      }
      // A decision made here is known at once, without reading it back: a reader that resumes
      // right after deciding finds the call already running, not still parked.
      const decided = await this.#nextEvent(id, Math.min(POLL_MS, left), stopSignal);
      if (decided) return decided;
    }
  }

  /** The reason the user gave when they denied the call, or null. */
  async reasonOf(id: string): Promise<string | null> {
    const row = await this.db
      .selectFrom('wire_approvals')
      .select('reason')
      .where('id', '=', id)
      .executeTakeFirst();
    return row?.reason ?? null;
  }

  /** Whether the run still waits for a decision: an approval of it pending and not expired. */
  async hasPending(runId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('wire_approvals')
      .select('id')
      .where('run_id', '=', runId)
      .where('status', '=', 'pending')
      .where('expires_at', '>', new Date(this.now()))
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  async markExecuted(id: string): Promise<void> {
    await this.db.updateTable('wire_approvals').set({ status: 'executed' }).where('id', '=', id).execute();
  }

  /** Drops every still-pending approval of a run (the run was stopped). */
  async dropForRun(runId: string): Promise<void> {
    const rows = await this.db
      .updateTable('wire_approvals')
      .set({ status: 'dropped', decided_at: new Date(this.now()) })
      .where('run_id', '=', runId)
      .where('status', '=', 'pending')
      .returning('id')
      .execute();
    for (const row of rows) this.#notify(row.id, 'dropped');
  }

  /**
   * Drops the approvals of a run whose instance is gone: pending ones, and approved ones whose
   * call never ran (nothing is left to run them).
   */
  async dropForLostRun(runId: string): Promise<void> {
    const rows = await this.db
      .updateTable('wire_approvals')
      .set({ status: 'dropped', decided_at: new Date(this.now()) })
      .where('run_id', '=', runId)
      .where('status', 'in', ['pending', 'approved'])
      .returning('id')
      .execute();
    for (const row of rows) this.#notify(row.id, 'dropped');
  }

  /** Moves a pending approval to a final state; false when it was no longer pending. */
  async #settle(id: string, status: 'expired' | 'dropped'): Promise<boolean> {
    const row = await this.db
      .updateTable('wire_approvals')
      .set({ status, decided_at: new Date(this.now()) })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .returning('id')
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Resolves after `ms`, at a stop, or at a decision made here (with its outcome). */
  #nextEvent(id: string, ms: number, stopSignal: Promise<void>): Promise<ApprovalOutcome | undefined> {
    return new Promise((resolve) => {
      const waiters = this.#waiters.get(id) ?? new Set();
      this.#waiters.set(id, waiters);
      const done = (outcome?: ApprovalOutcome) => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.#waiters.delete(id);
        resolve(outcome);
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
      void stopSignal.then(() => done());
    });
  }

  #notify(id: string, outcome: ApprovalOutcome): void {
    for (const wake of [...(this.#waiters.get(id) ?? [])]) wake(outcome);
  }

  #select(owner: string) {
    return this.db
      .selectFrom('wire_approvals')
      .select([
        'id',
        'run_id',
        'thread_id',
        'tool_call_id',
        'tool',
        'input',
        'status',
        'grant_id',
        'created_at',
        'decided_at',
        'expires_at',
      ])
      .where('owner', '=', owner);
  }

  #view(row: ApprovalRow): ApprovalView {
    const expired = row.status === 'pending' && new Date(row.expires_at).getTime() <= this.now();
    const status: ApprovalView['status'] = expired
      ? 'expired'
      : row.status === 'approved'
        ? 'pending'
        : row.status;
    return {
      id: row.id,
      status,
      runId: row.run_id,
      threadId: row.thread_id,
      createdAt: new Date(row.created_at).toISOString(),
      expiresAt: new Date(row.expires_at).toISOString(),
      decidedAt: row.decided_at ? new Date(row.decided_at).toISOString() : null,
      grantId: row.grant_id,
      // Approved and still running: the resume window. Still pending, but nothing left to decide.
      ...(row.status === 'pending' && !expired
        ? { request: { tool: row.tool, toolCallId: row.tool_call_id, input: row.input } }
        : {}),
    };
  }
}
