import type { Logger } from '../http/logger.js';
import type { SettlementJournal } from './journal.js';
import type { Settlement, SettleResult } from './settlement.js';

/**
 * Answered calls on their way to the store. Each is journaled (when a journal is kept: its answer
 * waits for the record to be on disk) and settled in the background; a settlement the store does
 * not take (it is unreachable, restarting, failing over) stays here and is tried again with
 * backoff until it commits, however long that takes. Retries are idempotent: a settlement that
 * did commit before its answer was lost posts nothing the second time.
 *
 * Settlements share transactions (the calls that end together are settled together), so one
 * record the store refuses (its tenant deleted, a cost out of range) fails the records batched
 * with it. A record refused while the store is reachable is therefore retried alone, in a
 * transaction of its own, and only a refusal of it alone counts against it: after five, it is
 * set aside (logged with what is needed to bill it, and left in the journal, where the next boot
 * tries it again). The records that shared its batch settle on their own retry.
 *
 * @see docs/billing.md "Settlement journal"
 */
export interface UnsettledCalls {
  /**
   * Takes an answered call; resolves once it is durable: journaled (or, when the journal cannot
   * be written, settled in the store), or at once without a journal. Rejects with
   * `BillNotDurableError` when it is neither.
   */
  record(settlement: Settlement): Promise<void>;
  /**
   * Takes over the journal segments of instances that are gone (`lapsed`: which of the named
   * instances no longer beat) and settles their records; resolves with how many were taken.
   */
  adoptOrphans(lapsed?: (instanceIds: string[]) => Promise<ReadonlySet<string>>): Promise<number>;
  /** Calls recorded and not yet settled. */
  readonly count: number;
  /**
   * Settles everything recorded, retrying until the deadline; resolves with how many calls are
   * still unsettled then (they stay in the journal for the next boot).
   */
  flush(deadline: number): Promise<number>;
  close(): void;
}

export interface UnsettledCallsOptions {
  /** Settles in a transaction shared with the other settlements under way. */
  settle: (settlement: Settlement) => Promise<SettleResult>;
  /** Settles in a transaction of its own (a record that failed a shared one). Default: `settle`. */
  settleAlone?: (settlement: Settlement) => Promise<SettleResult>;
  /** True when the store answers (a refusal then is about the record, not the store). */
  reachable: () => Promise<boolean>;
  journal: SettlementJournal | null;
  logger: Logger;
  /** First retry after a failure; doubles up to `maxRetryMs`. Defaults 200 ms and 5 s. */
  retryMs?: number;
  maxRetryMs?: number;
}

/**
 * An answered call whose bill is neither in the journal nor in the store: its answer must not end
 * as complete. It is still settled from memory when the store takes it.
 */
export class BillNotDurableError extends Error {
  override name = 'BillNotDurableError';
  constructor(readonly usageId: string) {
    super('The call could be recorded neither in the settlement journal nor in the store');
  }
}

/** Refusals of one record alone while the store is reachable before it is set aside until the next boot. */
const REFUSALS_BEFORE_SET_ASIDE = 5;

export function createUnsettledCalls(options: UnsettledCallsOptions): UnsettledCalls {
  const { journal, logger } = options;
  const firstRetryMs = options.retryMs ?? 200;
  const maxRetryMs = options.maxRetryMs ?? 5000;
  const waiting = new Map<string, Settlement>();
  const inFlight = new Set<string>();
  const refusals = new Map<string, number>();
  /** Records refused in a shared transaction while the store was reachable: retried alone. */
  const suspects = new Set<string>();
  const settleAlone = options.settleAlone ?? options.settle;
  let retryMs = firstRetryMs;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const attempt = async (settlement: Settlement): Promise<boolean> => {
    const alone = suspects.has(settlement.usageId);
    inFlight.add(settlement.usageId);
    try {
      await (alone ? settleAlone : options.settle)(settlement);
      waiting.delete(settlement.usageId);
      refusals.delete(settlement.usageId);
      suspects.delete(settlement.usageId);
      journal?.settled(settlement.usageId);
      retryMs = firstRetryMs;
      return true;
    } catch (error) {
      // Later attempts look up earlier postings: this one may have committed before it failed.
      waiting.set(settlement.usageId, { ...settlement, retried: true });
      await noteFailure(settlement, alone, error);
      scheduleRetry();
      return false;
    } finally {
      inFlight.delete(settlement.usageId);
    }
  };

  const noteFailure = async (settlement: Settlement, alone: boolean, error: unknown) => {
    if (!(await options.reachable().catch(() => false))) return;
    if (!alone) {
      // Refused in company: maybe for another record's sake. It is judged on its own next time.
      suspects.add(settlement.usageId);
      return;
    }
    const refused = (refusals.get(settlement.usageId) ?? 0) + 1;
    refusals.set(settlement.usageId, refused);
    if (refused < REFUSALS_BEFORE_SET_ASIDE) return;
    waiting.delete(settlement.usageId);
    refusals.delete(settlement.usageId);
    suspects.delete(settlement.usageId);
    logger.error('metered call refused by the store; kept in the settlement journal for the next boot', {
      usage_id: settlement.usageId,
      tenant_id: settlement.tenantId,
      provider: settlement.provider,
      cost_micros: settlement.costMicros,
      journal: journal?.dir ?? null,
      error: error instanceof Error ? error.message : String(error),
    });
  };

  const scheduleRetry = () => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      retryMs = Math.min(retryMs * 2, maxRetryMs);
      void retryWaiting();
    }, retryMs);
    timer.unref();
  };

  /**
   * Tries every waiting record not already on its way: together (the batcher puts them in shared
   * transactions), and the suspects one after another, each alone.
   */
  const retryWaiting = async (): Promise<void> => {
    const ready = [...waiting.values()].filter((s) => !inFlight.has(s.usageId));
    const together = Promise.all(ready.filter((s) => !suspects.has(s.usageId)).map(attempt));
    for (const settlement of ready.filter((s) => suspects.has(s.usageId))) {
      if (closed) break;
      const latest = waiting.get(settlement.usageId);
      if (latest && !inFlight.has(settlement.usageId)) await attempt(latest);
    }
    await together;
  };

  return {
    record(settlement) {
      waiting.set(settlement.usageId, settlement);
      const settled = attempt(settlement);
      if (!journal) return Promise.resolve();
      return journal.append(settlement).catch(async (error: unknown) => {
        // Not on disk (a full disk, say): the bill is durable once the store has it instead, and
        // the answer waits for that. With neither, it is not: the caller's answer is cut.
        logger.error('settlement journal append failed; the call waits for the store', {
          usage_id: settlement.usageId,
          error: error instanceof Error ? error.message : String(error),
        });
        if (!(await settled)) throw new BillNotDurableError(settlement.usageId);
      });
    },
    async adoptOrphans(lapsed) {
      if (!journal || closed) return 0;
      const adopted = (await journal.adopt(lapsed)).filter((s) => !waiting.has(s.usageId));
      for (const settlement of adopted) waiting.set(settlement.usageId, settlement);
      if (adopted.length > 0) {
        logger.info('settling calls from the journal of a stopped instance', { calls: adopted.length });
        void retryWaiting();
      }
      return adopted.length;
    },
    get count() {
      return waiting.size;
    },
    async flush(deadline) {
      let pause = 50;
      while (waiting.size > 0 && Date.now() < deadline) {
        const before = waiting.size;
        if (inFlight.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
        else await retryWaiting();
        if (waiting.size >= before && inFlight.size === 0) {
          await new Promise((resolve) => setTimeout(resolve, Math.min(pause, deadline - Date.now())));
          pause = Math.min(pause * 2, 1000);
        }
      }
      return waiting.size;
    },
    close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
