import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { type Logger, silentLogger } from '../http/logger.js';
import { createBatcher } from '../internal/batcher.js';
import { TtlCache } from '../internal/ttl-cache.js';
import type { Database } from '../store/database.js';
import type { Store } from '../store/index.js';
import {
  type AdmissionPolicy,
  type AdmitRequest,
  type AdmitResult,
  admitBatch,
  type LeaseView,
} from './admission.js';
import type { SettlementJournal } from './journal.js';
import { parseWalletNotice, WALLETS_CHANNEL } from './ledger.js';
import { type Settlement, type SettleResult, settleBatch } from './settlement.js';
import { createUnsettledCalls } from './unsettled.js';

/**
 * Money on a metered call: admission holds credit before the upstream call, settlement debits the
 * real cost after it. Both are batched (the calls that arrive together share one transaction),
 * and settlement runs after the caller's response.
 *
 * The rule for calls racing past zero: a call is admitted only while the tenant's available
 * credit (balance minus the holds of calls in flight) is above zero, and holds its known cost or
 * estimate, capped at what is available. So only calls already in flight can overdraw, and only
 * by their cost beyond their hold.
 *
 * Leases keep the store off the hot path without bending that rule: an admission in the store
 * also reserves, as one hold row, a lease of a quarter of the credit left (at most USD 10) for
 * this instance. Calls admitted from the lease need no store round trip; the lease is credit
 * already taken out of "available", so no other instance can admit against it. A lease is used
 * only while it is fresh (renewed by each admission in the store, within a minute), never for
 * apps with spend caps (their calls always go through the store, so caps are exact), and it is
 * set aside when a wallet notice shows the balance fell below four times the lease (other
 * instances' calls cost more than they held). Near zero, leases shrink to nothing and every
 * call is admitted in the store.
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
  /** How often segments of stopped processes are looked for (with a journal). Default 10 s. */
  adoptEveryMs?: number;
  logger?: Logger;
}

export interface MeteringEngine {
  admit(request: AdmitRequest): Promise<AdmitResult>;
  /**
   * Bills an answered call: records it (resolves once the record is durable: journaled, or at
   * once without a journal) and settles it in the store in the background, retrying while the
   * store is away. The caller's answer ends after this resolves.
   */
  record(settlement: Settlement): Promise<void>;
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
  /** Forgets whether an app has spend caps (they were just changed here). */
  forgetCaps(appId: string): void;
  /** Follows wallet notices (leases are set aside when a balance runs low). */
  follow(store: Pick<Store, 'listen'>): Promise<void>;
  /** Gives this instance's leased credit back to the store, stops following, closes the journal. */
  close(): Promise<void>;
}

interface LocalLease extends LeaseView {
  expiresAt: number;
  /** Set aside: calls go through the store until the next admission there sizes it anew. */
  setAside: boolean;
  /** An admission in the store for this tenant is under way: the lease waits for it. */
  busy: boolean;
}

/** A lease this close to its end is not used; the next admission in the store renews it. */
const LEASE_MARGIN_MS = 10_000;
/** How long the answer "this app has no spend cap" is trusted. */
const CAPS_CACHE_MS = 2000;

export function createMeteringEngine(
  db: Kysely<Database>,
  options: MeteringEngineOptions = {},
): MeteringEngine {
  const now = options.now ?? (() => new Date());
  const policy: AdmissionPolicy = {
    holdTtlMs: options.holdTtlMs ?? 15 * 60 * 1000,
    leaseTtlMs: options.leaseTtlMs ?? 60_000,
    leaseShare: options.leaseShare ?? 0.25,
    maxLeaseMicros: options.maxLeaseMicros ?? 10_000_000,
  };
  const leases = new Map<string, LocalLease>();
  let callsInFlight = 0;
  /** Apps known to have no spend cap, whose calls may be admitted from a lease. */
  const uncapped = new TtlCache<string, true>({
    ttlMs: CAPS_CACHE_MS,
    // Date.now unless a clock is injected: the admission path allocates no Date for it.
    now: options.now ? () => now().getTime() : Date.now,
  });
  let unlisten: (() => Promise<void>) | undefined;

  const admitInStore = createBatcher(async (requests: AdmitRequest[]) => {
    const tenants = [...new Set(requests.map((r) => r.tenantId))];
    const views = new Map<string, LeaseView>();
    for (const tenantId of tenants) {
      const lease = leases.get(tenantId);
      if (!lease) continue;
      lease.busy = true;
      views.set(tenantId, { id: lease.id, budget: lease.budget });
    }
    try {
      const outcome = await db
        .transaction()
        .execute((trx) => admitBatch(trx, requests, views, policy, now()));
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
          busy: false,
        });
      }
      return outcome.results;
    } finally {
      for (const tenantId of tenants) {
        const lease = leases.get(tenantId);
        if (lease) lease.busy = false;
      }
    }
  });

  const admit = async (request: AdmitRequest): Promise<AdmitResult> => {
    const lease = leases.get(request.tenantId);
    const at = now().getTime();
    const capFree = request.appId === null || uncapped.has(request.appId);
    if (
      lease &&
      capFree &&
      !lease.busy &&
      !lease.setAside &&
      lease.expiresAt - at > LEASE_MARGIN_MS &&
      lease.budget >= request.holdMicros
    ) {
      lease.budget -= request.holdMicros;
      callsInFlight++;
      return { ok: true, usageId: randomUUID(), holdMicros: request.holdMicros, leaseId: lease.id };
    }
    const result = await admitInStore(request);
    if (result.ok) callsInFlight++;
    return result;
  };

  const settleInStore = createBatcher(
    async (settlements: Settlement[]) => {
      const settleOptions = {
        freshKeys: !settlements.some((s) => s.retried),
        uncapped: (appId: string) => uncapped.has(appId),
      };
      const results = await db
        .transaction()
        .execute((trx) => settleBatch(trx, settlements, now(), settleOptions));
      options.onSettled?.([...new Set(settlements.map((s) => s.tenantId))]);
      return results;
    },
    { delayMs: options.settleDelayMs ?? 50, maxBatch: 512 },
  );
  const underWay = new Map<string, Set<Promise<unknown>>>();
  const settle = (settlement: Settlement) => {
    const promise = settleInStore(settlement);
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
    return promises.length === 0 ? null : Promise.allSettled(promises).then(() => undefined);
  };

  const dropOwnHolds = createBatcher(async (usageIds: string[]) => {
    await db.deleteFrom('holds').where('id', 'in', usageIds).execute();
    return usageIds.map(() => undefined);
  });
  const release: MeteringEngine['release'] = async (admission, tenantId) => {
    callsInFlight = Math.max(0, callsInFlight - 1);
    if (admission.leaseId === null) return dropOwnHolds(admission.usageId);
    // A leased call's credit goes back to the lease it came from, if that is still the lease.
    const lease = leases.get(tenantId);
    if (lease?.id === admission.leaseId) lease.budget += admission.holdMicros;
  };

  const journal = options.journal ?? null;
  const unsettled = createUnsettledCalls({
    settle,
    reachable: () =>
      sql`select 1`.execute(db).then(
        () => true,
        () => false,
      ),
    journal,
    logger: options.logger ?? silentLogger,
  });
  // Calls a stopped process answered and did not settle: now, and every few seconds after (a
  // sibling process on this host may stop at any time).
  unsettled.adoptOrphans();
  const adoptTimer = journal
    ? setInterval(() => unsettled.adoptOrphans(), options.adoptEveryMs ?? 10_000)
    : undefined;
  adoptTimer?.unref();

  const record = (settlement: Settlement) => {
    callsInFlight = Math.max(0, callsInFlight - 1);
    return unsettled.record(settlement);
  };

  const drain: MeteringEngine['drain'] = async (deadline) => {
    while (callsInFlight > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const inFlight = callsInFlight;
    return { inFlight, unsettled: await unsettled.flush(deadline) };
  };

  return {
    admit,
    record,
    settle,
    settled,
    pendingFor,
    release,
    drain,
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
      unlisten = await store.listen(WALLETS_CHANNEL, (payload) => {
        if (payload === null) {
          for (const lease of leases.values()) lease.setAside = true;
          return;
        }
        for (const { tenantId, balanceMicros } of parseWalletNotice(payload)) {
          const lease = leases.get(tenantId);
          if (lease && balanceMicros < lease.budget / policy.leaseShare) lease.setAside = true;
        }
      });
    },
    async close() {
      clearInterval(adoptTimer);
      unsettled.close();
      await unlisten?.();
      const ids = [...leases.values()].map((lease) => lease.id);
      leases.clear();
      try {
        if (ids.length > 0) await db.deleteFrom('holds').where('id', 'in', ids).execute();
      } finally {
        // Records not settled stay on disk: the next boot (or a sibling process) settles them.
        await journal?.close();
      }
    },
  };
}
