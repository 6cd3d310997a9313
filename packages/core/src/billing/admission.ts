import { randomUUID } from 'node:crypto';
import { type Insertable, type Kysely, sql, type Transaction } from 'kysely';
import type { Database, HoldsTable, SpendPeriod } from '../store/database.js';
import { lockWallets } from './ledger.js';
import { SPEND_PERIODS, spendWindow } from './windows.js';

/**
 * Admission in the store: one transaction for a batch of calls. Under the wallet row locks it
 * reads each tenant's available credit (balance minus the holds of calls in flight, leases
 * included), refuses at or below zero and on a reached spend cap, holds each admitted call's
 * expected cost, and sizes this instance's lease of credit for calls admitted without the store.
 *
 * A call is *closing* when the credit left does not cover the worst case of every call in flight
 * and its own (each hold row keeps its call's worst case): it may overdraw. The instance lets a
 * tenant's closing calls run one at a time (later ones that would close too answer `turn` and
 * wait for it), so the overdraft is bounded by one call's worst case per instance. A closing call
 * reserves only its hold against the calls after it: whatever they cost, its own overdraft stays
 * within its worst case, so calls that fit beside it run without waiting for it.
 *
 * @see docs/billing.md "Admission"
 */
export interface AdmitRequest {
  tenantId: string;
  /** The app whose spend caps apply (App Key calls); null for none. */
  appId: string | null;
  /** Credit to hold: the known cost, or the expected cost when it is known only afterwards. */
  holdMicros: number;
  /** The most the call can cost (default: its hold). */
  worstMicros?: number;
  /**
   * False while a closing call of the tenant is in flight on this instance: a call that would
   * close too answers `turn` instead. Default true.
   */
  mayClose?: boolean;
}

export type AdmitResult =
  | {
      ok: true;
      usageId: string;
      holdMicros: number;
      leaseId: string | null;
      /** The credit left did not cover the worst cases in flight: this call may overdraw. */
      closing?: boolean;
    }
  | { ok: false; reason: 'balance_exhausted' }
  | { ok: false; reason: 'spend_cap_exceeded'; window: SpendPeriod; resetsAt: Date }
  /** This instance is stopping: the call should go to another one. */
  | { ok: false; reason: 'stopping' };

/** In a batch, also: a closing call of the tenant was admitted before this one; wait for it, then ask again. */
export type BatchAdmitResult = AdmitResult | { ok: false; reason: 'turn' };

/** This instance's lease of a tenant's credit, as the admission batch sees it. */
export interface LeaseView {
  id: string;
  /** Credit of the lease not yet handed to calls; returned to the pool before re-sizing. */
  budget: number;
}

/** A lease after the batch: its new unspent budget (0 when credit is short). */
export interface LeaseGrant {
  tenantId: string;
  id: string;
  budget: number;
  expiresAt: Date;
}

export interface AdmissionPolicy {
  /** How long a single call's hold counts if the call never settles. */
  holdTtlMs: number;
  leaseTtlMs: number;
  /** A lease takes this fraction of the credit left after the batch... */
  leaseShare: number;
  /** ...but never more than this. */
  maxLeaseMicros: number;
  /** The instance the holds belong to: they are let go when its heartbeat stops. */
  instanceId: string | null;
}

export interface AdmissionOutcome {
  results: BatchAdmitResult[];
  leases: LeaseGrant[];
  /** Apps seen in the batch, and whether they have a spend cap. */
  capped: Map<string, boolean>;
}

export async function admitBatch(
  trx: Transaction<Database>,
  requests: AdmitRequest[],
  leases: Map<string, LeaseView>,
  policy: AdmissionPolicy,
  at: Date,
): Promise<AdmissionOutcome> {
  for (const request of requests) {
    if (!Number.isSafeInteger(request.holdMicros) || request.holdMicros < 0) {
      throw new RangeError('holdMicros must be a whole, non-negative number');
    }
    const worst = request.worstMicros ?? request.holdMicros;
    if (!Number.isSafeInteger(worst) || worst < request.holdMicros) {
      throw new RangeError('worstMicros must be a whole number, at least holdMicros');
    }
  }
  const tenantIds = [...new Set(requests.map((r) => r.tenantId))].sort();
  // The wallet row locks order admissions and settlements of one tenant across instances.
  const wallets = await lockWallets(trx, tenantIds);
  await trx.deleteFrom('holds').where('tenant_id', 'in', tenantIds).where('expires_at', '<=', at).execute();
  const held = await trx
    .selectFrom('holds')
    .select([
      'tenant_id',
      (eb) => eb.fn.sum<number>('amount_micros').as('held'),
      (eb) => eb.fn.sum<number>(eb.fn.coalesce('worst_micros', 'amount_micros')).as('reserved'),
    ])
    .where('tenant_id', 'in', tenantIds)
    .groupBy('tenant_id')
    .execute();
  /** Balance minus the holds in flight: a call is refused only when this is spent. */
  const available = new Map(wallets.map((w) => [w.tenant_id, w.balance_micros]));
  /** Balance minus the worst cases in flight: while a call's worst case fits here, it cannot overdraw. */
  const uncommitted = new Map(available);
  for (const row of held) {
    available.set(row.tenant_id, (available.get(row.tenant_id) ?? 0) - Number(row.held));
    uncommitted.set(row.tenant_id, (uncommitted.get(row.tenant_id) ?? 0) - Number(row.reserved));
  }
  // This instance's unspent lease budget goes back to the pool; the lease is sized anew below.
  for (const tenantId of tenantIds) {
    const lease = leases.get(tenantId);
    if (!lease) continue;
    available.set(tenantId, (available.get(tenantId) ?? 0) + lease.budget);
    uncommitted.set(tenantId, (uncommitted.get(tenantId) ?? 0) + lease.budget);
  }
  const closingIn = new Set<string>();

  const caps = await capsOf(trx, requests, at);
  const holds: Insertable<HoldsTable>[] = [];
  const results = requests.map((request): BatchAdmitResult => {
    const left = available.get(request.tenantId) ?? 0;
    if (left <= 0) return { ok: false, reason: 'balance_exhausted' };
    const cap = request.appId ? caps.states.get(request.appId) : undefined;
    const tripped = cap?.find((c) => c.spent + c.held >= c.cap);
    if (tripped)
      return { ok: false, reason: 'spend_cap_exceeded', window: tripped.period, resetsAt: tripped.resetsAt };
    const worst = request.worstMicros ?? request.holdMicros;
    const cover = uncommitted.get(request.tenantId) ?? 0;
    const closing = cover < worst;
    if (closing && (closingIn.has(request.tenantId) || request.mayClose === false)) {
      return { ok: false, reason: 'turn' };
    }
    if (closing) closingIn.add(request.tenantId);
    const hold = Math.min(request.holdMicros, left);
    available.set(request.tenantId, left - hold);
    // A closing call reserves its hold only (its row keeps no worst case): its overdraft is
    // bounded by its own worst case however the calls after it spend, so those that fit beside
    // it need not wait for it.
    uncommitted.set(request.tenantId, cover - (closing ? hold : worst));
    for (const c of cap ?? []) c.held += hold;
    const usageId = randomUUID();
    holds.push({
      id: usageId,
      tenant_id: request.tenantId,
      app_id: request.appId,
      amount_micros: hold,
      worst_micros: !closing && worst > hold ? worst : null,
      instance_id: policy.instanceId,
      expires_at: new Date(at.getTime() + policy.holdTtlMs),
    });
    return { ok: true, usageId, holdMicros: hold, leaseId: null, closing };
  });

  const grants: LeaseGrant[] = [];
  const leaseExpiry = new Date(at.getTime() + policy.leaseTtlMs);
  for (const tenantId of tenantIds) {
    // A lease is credit no call in flight may need: what is left beyond their worst cases.
    const left = Math.max(0, Math.min(available.get(tenantId) ?? 0, uncommitted.get(tenantId) ?? 0));
    const budget = Math.min(Math.floor(left * policy.leaseShare), policy.maxLeaseMicros);
    const lease = leases.get(tenantId);
    if (lease) {
      // Relative, so settlements of the lease's calls committing meanwhile are not undone.
      const moved = await trx
        .updateTable('holds')
        .set((eb) => ({
          amount_micros: eb('amount_micros', '+', budget - lease.budget),
          expires_at: leaseExpiry,
        }))
        .where('id', '=', lease.id)
        .executeTakeFirst();
      if (moved.numUpdatedRows > 0n) {
        grants.push({ tenantId, id: lease.id, budget, expiresAt: leaseExpiry });
        continue;
      }
    }
    if (budget === 0) continue;
    const id = randomUUID();
    holds.push({
      id,
      tenant_id: tenantId,
      app_id: null,
      amount_micros: budget,
      worst_micros: null,
      instance_id: policy.instanceId,
      expires_at: leaseExpiry,
    });
    grants.push({ tenantId, id, budget, expiresAt: leaseExpiry });
  }
  if (holds.length > 0) await trx.insertInto('holds').values(holds).execute();
  return { results, leases: grants, capped: caps.capped };
}

interface CapState {
  period: SpendPeriod;
  cap: number;
  spent: number;
  /** Credit held by the app's calls in flight: counted against the cap until they settle. */
  held: number;
  resetsAt: Date;
}

/** The caps of the batch's apps with their windows' settled spend and their calls in flight. */
async function capsOf(
  trx: Transaction<Database>,
  requests: AdmitRequest[],
  at: Date,
): Promise<{ states: Map<string, CapState[]>; capped: Map<string, boolean> }> {
  const ids = [...new Set(requests.map((r) => r.appId).filter((id): id is string => id !== null))];
  const states = new Map<string, CapState[]>();
  const capped = new Map(ids.map((id) => [id, false]));
  if (ids.length === 0) return { states, capped };
  const caps = await trx
    .selectFrom('spend_caps')
    .select(['app_id', 'daily_micros', 'monthly_micros'])
    .where('app_id', 'in', ids)
    .execute();
  if (caps.length === 0) return { states, capped };
  const cappedIds = caps.map((c) => c.app_id);
  const windows = SPEND_PERIODS.map((period) => spendWindow(period, at));
  const spend = await trx
    .selectFrom('app_spend')
    .select(['app_id', 'period', 'spent_micros'])
    .where('app_id', 'in', cappedIds)
    .where((eb) =>
      eb.or(windows.map((w) => eb.and([eb('period', '=', w.period), eb('period_start', '=', w.start)]))),
    )
    .execute();
  const inFlight = await trx
    .selectFrom('holds')
    .select(['app_id', (eb) => eb.fn.sum<number>('amount_micros').as('held')])
    .where('app_id', 'in', cappedIds)
    .where('expires_at', '>', at)
    .groupBy('app_id')
    .execute();
  for (const cap of caps) {
    capped.set(cap.app_id, true);
    const held = Number(inFlight.find((h) => h.app_id === cap.app_id)?.held ?? 0);
    const list: CapState[] = [];
    for (const window of windows) {
      const limit = window.period === 'daily' ? cap.daily_micros : cap.monthly_micros;
      if (limit === null) continue;
      const spent =
        spend.find((s) => s.app_id === cap.app_id && s.period === window.period)?.spent_micros ?? 0;
      list.push({ period: window.period, cap: limit, spent, held, resetsAt: window.resetsAt });
    }
    states.set(cap.app_id, list);
  }
  return { states, capped };
}

/**
 * Lets go of a tenant's holds that no call will settle: expired ones and those of instances that
 * stopped beating (admission and the heartbeat's reaper drop them too, in time; this does it now,
 * for a manual settle). Holds of live calls and live leases stay. Resolves with how many went.
 */
export async function releaseStaleHolds(db: Kysely<Database>, tenantId: string, at: Date): Promise<number> {
  const released = await db
    .deleteFrom('holds')
    .where('tenant_id', '=', tenantId)
    .where((eb) =>
      eb.or([
        eb('expires_at', '<=', at),
        eb.and([
          eb('instance_id', 'is not', null),
          eb.not(
            eb.exists(
              eb
                .selectFrom('instances')
                .select('instances.id')
                .whereRef('instances.id', '=', 'holds.instance_id')
                .where('instances.alive_until', '>', sql<Date>`now()`),
            ),
          ),
        ]),
      ]),
    )
    .executeTakeFirst();
  return Number(released.numDeletedRows);
}
