import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { describeError, type Logger, silentLogger } from '../http/logger.js';
import { createBatcher } from '../internal/batcher.js';
import { TtlCache } from '../internal/ttl-cache.js';
import { isStoreUnavailable, LAST_KNOWN_MS } from '../store/availability.js';
import type { Database } from '../store/database.js';
import type { Store } from '../store/index.js';
import { type InstanceHeartbeat, lapsedInstances } from '../store/instances.js';
import {
  type AdmissionPolicy,
  type AdmitRequest,
  type AdmitResult,
  admitBatch,
  type BatchAdmitResult,
  type LeaseView,
  releaseStaleHolds,
} from './admission.js';
import type { SettlementJournal } from './journal.js';
import { parseWalletNotice, WALLETS_CHANNEL } from './ledger.js';
import { type Settlement, type SettleResult, settleBatch } from './settlement.js';
import { TypicalCosts } from './typical-costs.js';
import { createUnsettledCalls } from './unsettled.js';

export type { InstanceHeartbeat } from '../store/instances.js';
/**
 * Money on a metered call: admission holds credit before the upstream call, settlement debits the
 * real cost after it. Both are batched (the calls that arrive together share one transaction),
 * and settlement runs after the caller's response.
 *
 * The rule for calls racing past zero: a call is admitted only while the tenant's available
 * credit (balance minus the holds of calls in flight) is above zero, and holds its expected cost,
 * capped at what is available. A call whose worst case the credit no longer covers (with the
 * worst cases of the calls in flight) is *closing*: this instance runs a tenant's closing calls
 * one at a time, the next waiting for the one before it to settle. So the overdraft is bounded by
 * one call's worst case per instance.
 *
 * Leases keep the store off the hot path without bending that rule: an admission in the store
 * also reserves, as one hold row, a lease of a quarter of the credit left (at most USD 10) for
 * this instance. Calls admitted from the lease need no store round trip; the lease is credit
 * already taken out of "available", so no other instance can admit against it. A lease is used
 * only while it is fresh (renewed by each admission in the store, within a minute), never for
 * apps with spend caps (their calls always go through the store, so caps are exact), and it is
 * set aside when a wallet notice shows the balance fell below four times the lease (other
 * instances' calls cost more than they held). Near zero, leases shrink to nothing and every
 * call is admitted in the store. Calls admitted from a lease hold their worst case, so only
 * calls admitted in the store can be closing. Holds and leases name this instance, so they are let
 * go within seconds when its heartbeat stops (`store/instances.ts`).
 *
 * @see docs/billing.md
 */
export type { AdmitRequest, AdmitResult } from './admission.js';
export type { Settlement, SettleResult } from './settlement.js';

export interface MeteringEngineOptions {
  /** How long a hold counts if its call never settles (a crashed instance). Default 15 minutes. */
  holdTtlMs?: number;
  /** Leases: share of the credit left, most micros, lifetime. Defaults 1/4, USD 10, 60 s. Share 0 turns them off. */
  leaseShare?: number;
  maxLeaseMicros?: number;
  leaseTtlMs?: number;
  /**
   * Settlements wait this long for others to share their transaction (default 50 ms). They run
   * after the caller's response; balance reads on this instance wait for them.
   */
  settleDelayMs?: number;
  now?: () => Date;
  /** Called after each settlement commits, with the tenants whose balance moved. */
  onSettled?: (tenantIds: string[]) => void;
  /**
   * Where answered calls are recorded before their answer ends, so a stop, a crash or a store
   * outage bills them later (see `openSettlementJournal`). None: they wait in memory only.
   */
  journal?: SettlementJournal | null;
  /** How often segments of stopped instances are looked for (with a journal). Default 2 s. */
  adoptEveryMs?: number;
  logger?: Logger;
  /**
   * This instance's heartbeat: holds name it, and leases are used only while it is fresh; the
   * journals of other instances are taken over only while it may judge them dead. Without one,
   * holds and leases lapse only by their own expiry.
   */
  instance?: Pick<InstanceHeartbeat, 'id' | 'fresh'> & Partial<Pick<InstanceHeartbeat, 'mayJudgeOthers'>>;
  /** Longest a call waits for the tenant's closing call before it asks the store anyway. Default 60 s. */
  turnTimeoutMs?: number;
}

export interface MeteringEngine {
  /** Admits a call (a `turn` answer never leaves: the call waits for its turn and asks again). */
  admit(request: AdmitRequest): Promise<AdmitResult>;
  /**
   * Bills an answered call: records it (resolves once the record is durable: journaled, or at
   * once without a journal) and settles it in the store in the background, retrying while the
   * store is away. The caller's answer ends after this resolves.
   */
  record(settlement: Settlement): Promise<void>;
  /** The model's running average of real cost on this instance (null before one settled here). */
  typicalCost(provider: string, model: string | null): number | null;
  /** Debits a call in the store now, without a record (see `settled` for waiting on it). */
  settle(settlement: Settlement): Promise<SettleResult>;
  /** Metered calls admitted whose bill is not yet recorded or whose hold is not yet given back. */
  readonly callsInFlight: number;
  /** Answered calls recorded and not yet settled in the store. */
  readonly unsettledCount: number;
  /**
   * For a stop: waits for the calls in flight to be recorded, then settles every recorded call,
   * both until the deadline (ms since the epoch). Resolves with the calls left unsettled (they
   * stay in the journal for the next boot).
   */
  drain(deadline: number): Promise<{ inFlight: number; unsettled: number }>;
  /**
   * Resolves once the settlements under way on this instance (of one tenant, or all) have
   * committed or failed: a balance read on this instance waits for them, so a caller that has
   * its response reads a balance that includes its call.
   */
  settled(tenantId?: string): Promise<void>;
  /** `settled` when something is under way; null when nothing is (so a reader need not wait a turn). */
  pendingFor(tenantId?: string): Promise<void> | null;
  /** Gives back the hold of a call that will not be billed (upstream unreachable or failed). */
  release(
    admission: { usageId: string; holdMicros: number; leaseId: string | null },
    tenantId: string,
  ): Promise<void>;
  /**
   * A manual settle of a tenant: settles the answered calls this instance still holds (every
   * tenant's, until the deadline) and lets go of the tenant's stale holds. Resolves with the calls
   * left unsettled and the holds let go.
   */
  manualSettle(
    tenantId: string,
    deadline: number,
  ): Promise<{ unsettledCalls: number; releasedHolds: number }>;
  /** Forgets whether an app has spend caps (they were just changed here). */
  forgetCaps(appId: string): void;
  /** Follows wallet notices (leases are set aside when a balance runs low). */
  follow(store: Pick<Store, 'listen'>): Promise<void>;
  /** Drops this instance's leases (its heartbeat lapsed: the store may have let them go). */
  dropLeases(): Promise<void>;
  /** Gives this instance's leased credit back to the store, stops following, closes the journal. */
  close(): Promise<void>;
}

interface LocalLease extends LeaseView {
  expiresAt: number;
  /** Set aside: calls go through the store until the next admission there sizes it anew. */
  setAside: boolean;
  /**
   * An admission in the store for this tenant is under way, which sizes the lease anew: the lease
   * waits for it, and so do the calls it could have taken (see `admitInTurn`). Resolves when it ends.
   */
  renewing: Promise<void> | null;
}

/** A lease this close to its end is not used; the next admission in the store renews it. */
const LEASE_MARGIN_MS = 10_000;
/**
 * Instances asked to give their leases of a tenant back: the payload is the tenant id. Sent when
 * the store refuses a call for want of credit that other instances' leases may be holding.
 */
export const LEASE_RECALLS_CHANNEL = 'service_lease_recalls';
/** How long a refused call waits for recalled leases before it is admitted again (once). */
const RECALL_WAIT_MS = 100;
/** A tenant's leases are recalled at most this often by one instance. */
const RECALL_EVERY_MS = 1000;
const STOPPING: AdmitResult = { ok: false, reason: 'stopping' };
/** How long the answer "this app has no spend cap" is trusted. */
const CAPS_CACHE_MS = 2000;

export function createMeteringEngine(
  db: Kysely<Database>,
  options: MeteringEngineOptions = {},
): MeteringEngine {
  const now = options.now ?? (() => new Date());
  const logger = options.logger ?? silentLogger;
  const policy: AdmissionPolicy = {
    holdTtlMs: options.holdTtlMs ?? 15 * 60 * 1000,
    leaseTtlMs: options.leaseTtlMs ?? 60_000,
    leaseShare: options.leaseShare ?? 0.25,
    maxLeaseMicros: options.maxLeaseMicros ?? 10_000_000,
    instanceId: options.instance?.id ?? null,
  };
  const instanceFresh = options.instance ? () => options.instance!.fresh() : () => true;
  const typical = new TypicalCosts();
  /** Each tenant's closing call in flight here (see the rule above), ended by its settlement or release. */
  const turns = new Map<string, { usageId: string; done: Promise<void>; end: () => void }>();
  const turnTimeoutMs = options.turnTimeoutMs ?? 60_000;
  const takeTurn = (tenantId: string, usageId: string) => {
    let end!: () => void;
    const done = new Promise<void>((resolve) => {
      end = resolve;
    });
    // A call that never settles (its request failed between admission and forwarding) must not
    // stop the tenant's calls here for good.
    const timer = setTimeout(() => endTurn(tenantId, usageId), turnTimeoutMs);
    timer.unref?.();
    turns.set(tenantId, {
      usageId,
      done,
      end: () => {
        clearTimeout(timer);
        end();
      },
    });
  };
  const endTurn = (tenantId: string, usageId: string) => {
    const turn = turns.get(tenantId);
    if (turn?.usageId !== usageId) return;
    turns.delete(tenantId);
    turn.end();
  };
  const leases = new Map<string, LocalLease>();
  let callsInFlight = 0;
  /** Set by `drain`: no call is admitted any more (the proxy answers 503, the caller retries elsewhere). */
  let stopping = false;
  /** Apps known to have no spend cap, whose calls may be admitted from a lease. */
  const uncapped = new TtlCache<string, true>({
    ttlMs: CAPS_CACHE_MS,
    // The last answer still admits from the lease while the store cannot be asked (see `admitInTurn`).
    staleMs: LAST_KNOWN_MS,
    // Date.now unless a clock is injected: the admission path allocates no Date for it.
    now: options.now ? () => now().getTime() : Date.now,
  });
  let unlisten: (() => Promise<void>) | undefined;

  const admitInStore = createBatcher(
    (all: AdmitRequest[]): Promise<BatchAdmitResult[]> =>
      // While a closing call of the tenant is in flight here, a call that would close too waits for it.
      admitInStoreNow(all.map((r) => (turns.has(r.tenantId) ? { ...r, mayClose: false } : r))),
  );
  const admitInStoreNow = async (requests: AdmitRequest[]): Promise<BatchAdmitResult[]> => {
    if (requests.length === 0) return [];
    const tenants = [...new Set(requests.map((r) => r.tenantId))];
    const views = new Map<string, LeaseView>();
    let renewed!: () => void;
    const renewing = new Promise<void>((resolve) => {
      renewed = resolve;
    });
    for (const tenantId of tenants) {
      const lease = leases.get(tenantId);
      if (!lease) continue;
      lease.renewing = renewing;
      views.set(tenantId, { id: lease.id, budget: lease.budget });
    }
    try {
      const outcome = await db
        .transaction()
        .execute((trx) => admitBatch(trx, requests, views, policy, now()));
      outcome.results.forEach((result, i) => {
        if (result.ok && result.closing) takeTurn(requests[i]!.tenantId, result.usageId);
      });
      for (const [appId, capped] of outcome.capped) {
        if (capped) uncapped.delete(appId);
        else uncapped.set(appId, true);
      }
      for (const grant of outcome.leases) {
        // Credit given back by released calls during the batch stays with the lease.
        const givenBack =
          (leases.get(grant.tenantId)?.budget ?? 0) - (views.get(grant.tenantId)?.budget ?? 0);
        leases.set(grant.tenantId, {
          id: grant.id,
          budget: grant.budget + Math.max(0, givenBack),
          expiresAt: grant.expiresAt.getTime(),
          setAside: false,
          renewing: null,
        });
      }
      return outcome.results;
    } finally {
      for (const tenantId of tenants) {
        const lease = leases.get(tenantId);
        if (lease?.renewing === renewing) lease.renewing = null;
      }
      renewed();
    }
  };

  const admit = async (request: AdmitRequest): Promise<AdmitResult> => {
    if (stopping) return STOPPING;
    const result = await admitInTurn(request);
    if (result.ok) callsInFlight++;
    return result;
  };
  /**
   * Admits a call from the lease, else in the store; a call that would close while a closing call
   * of its tenant is in flight here waits for that one to end, then asks again.
   */
  const admitInTurn = async (request: AdmitRequest): Promise<AdmitResult> => {
    let waitedForLease = false;
    for (;;) {
      const leased = admitFromLease(request);
      if (leased) return leased;
      // The lease is being renewed: wait for that once, then take from it. Joining the next batch
      // in the store instead would renew the lease again, and the calls arriving meanwhile would
      // do the same: under steady load every call would go through the store.
      const renewing = leases.get(request.tenantId)?.renewing;
      if (renewing && !waitedForLease && capFree(request)) {
        waitedForLease = true;
        await renewing;
        continue;
      }
      let result: BatchAdmitResult;
      try {
        result = await admitInStore(request);
      } catch (error) {
        // The store cannot be reached: an app known to have no spend cap a moment ago (its answer
        // only out of date, as the key and the tenant's status are) is admitted from the lease still.
        const leasedAnyway = isStoreUnavailable(error) ? admitFromLease(request, true) : null;
        if (leasedAnyway) return leasedAnyway;
        throw error;
      }
      if (!result.ok && result.reason === 'balance_exhausted' && (await recalled(request.tenantId))) {
        // Other instances' leases may have held the credit: once they are given back, try again.
        const again = await admitInStore(request);
        if (again.ok || again.reason !== 'turn') return again;
        await turns.get(request.tenantId)?.done;
        continue;
      }
      if (result.ok || result.reason !== 'turn') return result;
      await turns.get(request.tenantId)?.done;
    }
  };
  /** Each tenant's last recall from here: its wait for the leases, and whether that is over. */
  const recalls = new TtlCache<string, { wait: Promise<boolean>; over: boolean }>({
    ttlMs: RECALL_EVERY_MS,
  });
  /**
   * Asks every instance to give its lease of the tenant back, and waits a moment for them to.
   * The calls refused together share one recall; false (nothing to wait for) once this instance
   * has recalled the tenant's leases within the last second and that wait is over.
   */
  const recalled = (tenantId: string): Promise<boolean> => {
    const last = recalls.get(tenantId);
    if (last) return last.over ? Promise.resolve(false) : last.wait;
    const recall = {
      over: false,
      wait: sql`select pg_notify(${LEASE_RECALLS_CHANNEL}, ${tenantId})`.execute(db).then(
        () => new Promise<boolean>((resolve) => setTimeout(() => resolve(true), RECALL_WAIT_MS)),
        () => false,
      ),
    };
    void recall.wait.then(() => {
      recall.over = true;
    });
    recalls.set(tenantId, recall);
    return recall.wait;
  };
  /**
   * Gives a set-aside lease's unspent credit back to the store, so other instances' admissions
   * can use it: a lease no call is admitted from must not keep the tenant's credit out of reach
   * until it expires. Its calls in flight keep their part of the row until they settle.
   */
  const giveBack = async (tenantId: string): Promise<void> => {
    const lease = leases.get(tenantId);
    // A renewal under way sizes the row itself (relative to the budget it saw).
    if (!lease?.setAside || lease.renewing || lease.budget <= 0) return;
    const amount = lease.budget;
    lease.budget = 0;
    try {
      await db
        .updateTable('holds')
        .set((eb) => ({ amount_micros: eb('amount_micros', '-', amount) }))
        .where('id', '=', lease.id)
        .execute();
    } catch {
      // The row is as it was: so is the budget (the next renewal returns it to the pool).
      if (leases.get(tenantId) === lease) lease.budget += amount;
    }
  };
  /**
   * Calls of apps without a spend cap may be admitted from a lease (a capped app's always go to
   * the store); `lastKnown`: the answer may be past its lifetime (the store cannot be asked).
   */
  const capFree = (request: AdmitRequest, lastKnown = false) =>
    request.appId === null ||
    (lastKnown ? uncapped.stale(request.appId) !== undefined : uncapped.has(request.appId));
  /** A call admitted from this instance's lease, in memory; null when the lease cannot take it. */
  const admitFromLease = (request: AdmitRequest, lastKnown = false): AdmitResult | null => {
    const lease = leases.get(request.tenantId);
    if (!lease) return null;
    const at = now().getTime();
    // A leased call holds its worst case: it can never overdraw, so it is never closing.
    const hold = request.worstMicros ?? request.holdMicros;
    if (
      !capFree(request, lastKnown) ||
      lease.renewing ||
      lease.setAside ||
      lease.expiresAt - at <= LEASE_MARGIN_MS ||
      lease.budget < hold ||
      !instanceFresh()
    ) {
      return null;
    }
    lease.budget -= hold;
    return { ok: true, usageId: randomUUID(), holdMicros: hold, leaseId: lease.id };
  };

  const settleTogether = createBatcher((settlements: Settlement[]) => settleNow(settlements), {
    delayMs: options.settleDelayMs ?? 50,
    maxBatch: 512,
  });
  /** One transaction for these settlements (one of the batcher's, or one record alone). */
  const settleNow = async (settlements: Settlement[]) => {
    const settleOptions = {
      freshKeys: !settlements.some((s) => s.retried),
      uncapped: (appId: string) => uncapped.has(appId),
    };
    const results = await db
      .transaction()
      .execute((trx) => settleBatch(trx, settlements, now(), settleOptions));
    options.onSettled?.([...new Set(settlements.map((s) => s.tenantId))]);
    return results;
  };
  const underWay = new Map<string, Set<Promise<unknown>>>();
  /** Settles in the store (shared with the settlements under way, or `alone`), tracked for balance reads. */
  const settle = (settlement: Settlement, alone = false) => {
    // A retry's cost was observed on its first attempt (or by the instance that answered it).
    if (!settlement.estimated && !settlement.retried) {
      typical.observe(settlement.provider, settlement.model, settlement.costMicros);
    }
    const promise = alone
      ? settleNow([settlement]).then((results) => results[0]!)
      : settleTogether(settlement);
    if (turns.has(settlement.tenantId)) {
      const next = () => endTurn(settlement.tenantId, settlement.usageId);
      promise.then(next, next);
    }
    let tracked = underWay.get(settlement.tenantId);
    if (!tracked) {
      tracked = new Set();
      underWay.set(settlement.tenantId, tracked);
    }
    const set = tracked;
    set.add(promise);
    const forget = () => {
      set.delete(promise);
      if (set.size === 0 && underWay.get(settlement.tenantId) === set) underWay.delete(settlement.tenantId);
    };
    promise.then(forget, forget);
    return promise;
  };
  const settled = (tenantId?: string): Promise<void> => pendingFor(tenantId) ?? Promise.resolve();
  /** Settlements under way (of a tenant, or all) as one promise; null when there are none. */
  const pendingFor = (tenantId?: string): Promise<void> | null => {
    const sets = tenantId
      ? [underWay.get(tenantId)].filter((set) => set !== undefined)
      : [...underWay.values()];
    const promises = sets.flatMap((set) => [...set]);
    if (promises.length === 0) return null;
    // Someone waits for them: the batch goes now rather than at the end of its delay.
    settleTogether.hurry();
    return Promise.allSettled(promises).then(() => undefined);
  };

  const dropOwnHolds = createBatcher(async (usageIds: string[]) => {
    await db.deleteFrom('holds').where('id', 'in', usageIds).execute();
    return usageIds.map(() => undefined);
  });
  const release: MeteringEngine['release'] = async (admission, tenantId) => {
    callsInFlight = Math.max(0, callsInFlight - 1);
    if (admission.leaseId === null) {
      try {
        return await dropOwnHolds(admission.usageId);
      } finally {
        endTurn(tenantId, admission.usageId);
      }
    }
    // A leased call's credit goes back to the lease it came from, if that is still the lease
    // (and on to the store when the lease is set aside).
    const lease = leases.get(tenantId);
    if (lease?.id === admission.leaseId) {
      lease.budget += admission.holdMicros;
      if (lease.setAside) await giveBack(tenantId);
    }
  };

  const journal = options.journal ?? null;
  const unsettled = createUnsettledCalls({
    settle,
    settleAlone: (settlement) => settle(settlement, true),
    reachable: () =>
      sql`select 1`.execute(db).then(
        () => true,
        () => false,
      ),
    journal,
    logger,
  });
  // Calls an instance that is gone answered and did not settle: now, and every few seconds after
  // (an instance sharing this journal folder may stop at any time). Its heartbeat row says it is
  // gone; this instance judges that only once it may judge others (see `store/instances.ts`).
  const instance = options.instance;
  const lapsed = async (ids: string[]): Promise<ReadonlySet<string>> =>
    instance?.mayJudgeOthers && !instance.mayJudgeOthers() ? new Set() : lapsedInstances(db, ids);
  const adoptOrphans = () => void unsettled.adoptOrphans(lapsed).catch(() => {});
  adoptOrphans();
  const adoptTimer = journal ? setInterval(adoptOrphans, options.adoptEveryMs ?? 2000) : undefined;
  adoptTimer?.unref();

  const record = (settlement: Settlement) => {
    callsInFlight = Math.max(0, callsInFlight - 1);
    return unsettled.record(settlement);
  };

  const drain: MeteringEngine['drain'] = async (deadline) => {
    stopping = true;
    while (callsInFlight > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const inFlight = callsInFlight;
    return { inFlight, unsettled: await unsettled.flush(deadline) };
  };

  const manualSettle: MeteringEngine['manualSettle'] = async (tenantId, deadline) => {
    const unsettledCalls = await unsettled.flush(deadline);
    const releasedHolds = await releaseStaleHolds(db, tenantId, now());
    return { unsettledCalls, releasedHolds };
  };

  const dropLeases = async () => {
    const ids = [...leases.values()].map((lease) => lease.id);
    leases.clear();
    if (ids.length > 0) await db.deleteFrom('holds').where('id', 'in', ids).execute();
  };

  return {
    admit,
    record,
    typicalCost: (provider, model) => typical.of(provider, model),
    settle: (settlement) => settle(settlement),
    settled,
    pendingFor,
    release,
    drain,
    manualSettle,
    get callsInFlight() {
      return callsInFlight;
    },
    get unsettledCount() {
      return unsettled.count;
    },
    forgetCaps: (appId) => {
      uncapped.delete(appId);
    },
    async follow(store) {
      const setAside = (tenantId: string) => {
        const lease = leases.get(tenantId);
        if (!lease) return;
        lease.setAside = true;
        void giveBack(tenantId);
      };
      const stopWallets = await store.listen(WALLETS_CHANNEL, (payload) => {
        if (payload === null) {
          for (const tenantId of leases.keys()) setAside(tenantId);
          return;
        }
        for (const { tenantId, balanceMicros } of parseWalletNotice(payload)) {
          const lease = leases.get(tenantId);
          if (lease && balanceMicros < lease.budget / policy.leaseShare) setAside(tenantId);
        }
      });
      // Another instance was refused for want of credit this instance's lease may hold.
      const stopRecalls = await store.listen(LEASE_RECALLS_CHANNEL, (payload) => {
        if (payload === null) for (const tenantId of leases.keys()) setAside(tenantId);
        else setAside(payload);
      });
      unlisten = async () => {
        await stopWallets();
        await stopRecalls();
      };
    },
    dropLeases,
    async close() {
      clearInterval(adoptTimer);
      unsettled.close();
      await unlisten?.();
      try {
        await dropLeases();
      } catch (error) {
        // The store is away: the leases lapse with this instance's heartbeat instead.
        logger.warn('stopping: leases not given back', describeError(error));
      } finally {
        // Records not settled stay on disk: the next boot (or a sibling process) settles them.
        await journal?.close();
      }
    },
  };
}
