import { sql, type Transaction } from 'kysely';
import { appendEvents, type EventDraft } from '../events/log.js';
import { storableText } from '../http/input-guard.js';
import type { Database, SpendPeriod } from '../store/database.js';
import { type Notice, sendNotices } from '../store/notices.js';
import { columnList, rowsFromJson } from '../store/rows-from-json.js';
import { applyPostings, balanceChangedEvents } from './ledger.js';
import type { Quantities } from './pricing.js';
import { noticesFor, SPEND_PERIODS, spendWindow } from './windows.js';

/**
 * Settlement in the store: one transaction for a batch of finished calls. It debits each tenant
 * the sum of its calls (one ledger entry, and the wallet), lets go of each call's hold (or
 * shrinks its lease), writes each call's usage row, adds to the apps' spend windows, and appends
 * the events the batch calls for: usage per app and provider, one balance per tenant, cap
 * warnings and trips once per window.
 *
 * @see docs/billing.md "Settlement"
 */
export interface Settlement {
  usageId: string;
  tenantId: string;
  appId: string | null;
  connectionId: string | null;
  keyId: string | null;
  provider: string;
  model: string | null;
  quantities: Quantities;
  /** Each meter's cost, rounded on its own, for usage reports. */
  meterCosts?: Quantities;
  costMicros: number;
  /** True when the cost is the admission estimate (the response never reported usage). */
  estimated: boolean;
  upstreamStatus: number | null;
  requestId: string | null;
  /** Set on a retry after a failed attempt (which may have committed): earlier usage rows are looked up. */
  retried?: boolean;
  /** What admission held for the call, and the lease it came from (null: its own hold row). */
  holdMicros: number;
  leaseId: string | null;
}

export interface SettleResult {
  balanceAfterMicros: number;
}

export interface SettleOptions {
  /**
   * First attempt with fresh usage ids: earlier usage rows are not looked up (a call settled
   * before then aborts the transaction with a unique violation, and its retry looks them up).
   */
  freshKeys: boolean;
  /** True for apps this instance knows to have no spend cap (their cap notices are not looked up). */
  uncapped: (appId: string) => boolean;
}

const USAGE_COLUMNS = {
  id: 'uuid',
  tenant_id: 'uuid',
  app_id: 'uuid',
  connection_id: 'uuid',
  key_id: 'uuid',
  provider: 'text',
  model: 'text',
  quantities: 'jsonb',
  meter_costs: 'jsonb',
  cost_micros: 'bigint',
  ledger_entry_id: 'bigint',
  upstream_status: 'integer',
  estimated: 'boolean',
  request_id: 'text',
  created_at: 'timestamptz',
};

/**
 * Usage rows written per statement. The embedded store inline runs each statement on the thread
 * that serves requests, in one piece: 128 rows hold it about 2 ms; a batch's 512, four times that.
 */
const USAGE_ROWS_PER_STATEMENT = 128;

export async function settleBatch(
  trx: Transaction<Database>,
  batch: Settlement[],
  at: Date,
  options: SettleOptions,
): Promise<SettleResult[]> {
  for (const s of batch) {
    if (!Number.isSafeInteger(s.costMicros) || s.costMicros < 0) {
      throw new RangeError('costMicros must be a whole, non-negative number');
    }
  }
  const settlements = await withoutDeletedParents(trx, batch);
  // A call settled before (a retried batch, a replayed journal) has its usage row: it posts
  // nothing again, writes no second event, and shrinks its lease no second time.
  const before = options.freshKeys ? new Map<string, number>() : await settledBefore(trx, settlements);
  const seen = new Set<string>();
  const fresh = settlements.filter((s) => {
    const first = !before.has(s.usageId) && !seen.has(s.usageId);
    seen.add(s.usageId);
    return first;
  });
  const notices: Notice[] = [];
  const debits = await debitTenants(trx, fresh, notices);
  await letGoOfHolds(trx, settlements, fresh);
  if (fresh.length > 0) {
    const rows = fresh.map((s) => ({
      id: s.usageId,
      tenant_id: s.tenantId,
      app_id: s.appId,
      connection_id: s.connectionId,
      key_id: s.keyId,
      provider: s.provider,
      // The proxy refuses such a model; a journal record from before it did still settles.
      model: s.model === null ? null : storableText(s.model),
      quantities: s.quantities,
      meter_costs: s.meterCosts ?? {},
      cost_micros: s.costMicros,
      ledger_entry_id: debits.get(s.tenantId)!.entryId,
      upstream_status: s.upstreamStatus,
      estimated: s.estimated,
      request_id: s.requestId,
    }));
    for (let i = 0; i < rows.length; i += USAGE_ROWS_PER_STATEMENT) {
      const chunk = rows.slice(i, i + USAGE_ROWS_PER_STATEMENT);
      // The batch's time is every row's: one parameter, not a timestamp to write and parse per row.
      await sql`insert into usage_events ${columnList(USAGE_COLUMNS)} ${rowsFromJson(USAGE_COLUMNS, chunk, { created_at: at })}`.execute(
        trx,
      );
    }
  }
  const drafts = [
    ...(await recordAppSpend(trx, fresh, at, options.uncapped)),
    ...(await usageEvents(trx, fresh)),
    // One per tenant and batch, with its final balance.
    ...(await balanceChangedEvents(
      trx,
      new Map([...debits].map(([tenantId, debit]) => [tenantId, debit.balanceAfterMicros])),
    )),
  ];
  await appendEvents(trx, drafts, at, notices);
  await sendNotices(trx, notices);
  // Each fresh call reports the balance right after it, as if the calls had posted one by one.
  const running = new Map(
    [...debits].map(([tenantId, d]) => [tenantId, d.balanceAfterMicros - d.amountMicros]),
  );
  const after = new Map<string, number>();
  for (const s of fresh) {
    const balance = running.get(s.tenantId)! - s.costMicros;
    running.set(s.tenantId, balance);
    after.set(s.usageId, balance);
  }
  return settlements.map((s) => ({ balanceAfterMicros: after.get(s.usageId) ?? before.get(s.usageId) ?? 0 }));
}

/** The batch's calls that have a usage row already, with the balance their debit left. */
async function settledBefore(trx: Transaction<Database>, settlements: Settlement[]) {
  const { rows } = await sql<{ id: string; balance_after_micros: number | null }>`
    select u.id, l.balance_after_micros from usage_events u
    left join ledger_entries l on l.id = u.ledger_entry_id
    where u.id = any(${settlements.map((s) => s.usageId)}::uuid[])
  `.execute(trx);
  return new Map(rows.map((row) => [row.id, Number(row.balance_after_micros ?? 0)]));
}

interface Debit {
  entryId: number;
  /** Negative: the sum of the tenant's calls in the batch. */
  amountMicros: number;
  balanceAfterMicros: number;
}

/**
 * One ledger entry per tenant for its calls of the batch, keyed by the first call's usage id
 * (never posted before: that call has no usage row). The usage rows hold each call; the entry is
 * their sum, so the ledger grows by a row per batch and tenant, not per call.
 */
async function debitTenants(
  trx: Transaction<Database>,
  fresh: Settlement[],
  notices: Notice[],
): Promise<Map<string, Debit>> {
  const byTenant = new Map<string, Settlement[]>();
  for (const s of fresh) {
    const calls = byTenant.get(s.tenantId);
    if (calls) calls.push(s);
    else byTenant.set(s.tenantId, [s]);
  }
  const debits = [...byTenant].map(([tenantId, calls]) => ({
    tenantId,
    amountMicros: -calls.reduce((sum, s) => sum + s.costMicros, 0),
    kind: 'usage' as const,
    idempotencyKey: `usage:${calls[0]!.usageId}`,
    description: debitDescription(calls),
  }));
  const posted = await applyPostings(trx, debits, { freshKeys: true, notices });
  return new Map(
    debits.map((d, i) => [
      d.tenantId,
      {
        entryId: posted[i]!.entryId,
        amountMicros: d.amountMicros,
        balanceAfterMicros: posted[i]!.balanceAfterMicros,
      },
    ]),
  );
}

/** `llm demo-small` for one call; `3 calls: llm demo-small, llm demo-large` for several. */
export function debitDescription(calls: Array<Pick<Settlement, 'provider' | 'model'>>): string {
  const labels = [...new Set(calls.map((s) => `${s.provider}${s.model ? ` ${storableText(s.model)}` : ''}`))];
  if (calls.length === 1) return labels[0]!;
  const shown = labels.slice(0, 3).join(', ');
  return `${calls.length} calls: ${shown}${labels.length > 3 ? ', …' : ''}`;
}

/**
 * The settlements, with an app, connection or key deleted since the call was answered no longer
 * named: the call is billed all the same, and its usage row reads as if the deletion had come
 * after it (which set such names to null). One look-up for the whole batch.
 */
async function withoutDeletedParents(trx: Transaction<Database>, settlements: Settlement[]) {
  const named = (pick: (s: Settlement) => string | null) => [
    ...new Set(settlements.map(pick).filter((id) => id !== null)),
  ];
  const apps = named((s) => s.appId);
  const connections = named((s) => s.connectionId);
  const keys = named((s) => s.keyId);
  if (apps.length + connections.length + keys.length === 0) return settlements;
  const { rows } = await sql<{ id: string }>`
    select id from apps where id = any(${apps}::uuid[])
    union all select id from connections where id = any(${connections}::uuid[])
    union all select id from api_keys where id = any(${keys}::uuid[])
  `.execute(trx);
  const live = new Set(rows.map((row) => row.id));
  if (live.size === apps.length + connections.length + keys.length) return settlements;
  const kept = (id: string | null) => (id !== null && live.has(id) ? id : null);
  return settlements.map((s) => ({
    ...s,
    appId: kept(s.appId),
    connectionId: kept(s.connectionId),
    keyId: kept(s.keyId),
  }));
}

/** Adds the apps' spend to their current windows and returns the cap notices newly due. */
async function recordAppSpend(
  trx: Transaction<Database>,
  settlements: Settlement[],
  at: Date,
  uncapped: (appId: string) => boolean,
): Promise<EventDraft[]> {
  const perApp = new Map<string, number>();
  for (const s of settlements) {
    if (s.appId && s.costMicros > 0) perApp.set(s.appId, (perApp.get(s.appId) ?? 0) + s.costMicros);
  }
  if (perApp.size === 0) return [];
  const windows = SPEND_PERIODS.map((period) => spendWindow(period, at));
  const rows = [...perApp.keys()].sort().flatMap((appId) =>
    windows.map((w) => ({
      app_id: appId,
      period: w.period,
      period_start: w.start,
      spent_micros: perApp.get(appId)!,
    })),
  );
  const totals = await trx
    .insertInto('app_spend')
    .values(rows)
    .onConflict((oc) =>
      oc
        .columns(['app_id', 'period', 'period_start'])
        .doUpdateSet({ spent_micros: sql`app_spend.spent_micros + excluded.spent_micros` }),
    )
    .returning(['app_id', 'period', 'spent_micros'])
    .execute();
  if ([...perApp.keys()].every(uncapped)) return [];
  const caps = await trx
    .selectFrom('spend_caps')
    .select(['app_id', 'daily_micros', 'monthly_micros', 'warn_pcts'])
    .where('app_id', 'in', [...perApp.keys()])
    .execute();
  const due: Array<{ app_id: string; period: SpendPeriod; period_start: string; notice: string }> = [];
  for (const cap of caps) {
    for (const w of windows) {
      const limit = w.period === 'daily' ? cap.daily_micros : cap.monthly_micros;
      const spent = totals.find((t) => t.app_id === cap.app_id && t.period === w.period)?.spent_micros;
      if (limit === null || spent === undefined) continue;
      for (const notice of noticesFor(spent, limit, cap.warn_pcts)) {
        due.push({ app_id: cap.app_id, period: w.period, period_start: w.start, notice });
      }
    }
  }
  if (due.length === 0) return [];
  // Insert-once: only the notices not sent before in this window come back.
  const sent = await trx
    .insertInto('cap_notices')
    .values(due)
    .onConflict((oc) => oc.columns(['app_id', 'period', 'period_start', 'notice']).doNothing())
    .returning(['app_id', 'period', 'notice'])
    .execute();
  return sent.map(
    (n): EventDraft =>
      n.notice === 'tripped'
        ? { appId: n.app_id, kind: 'billing.cap_tripped', fields: { window: n.period } }
        : {
            appId: n.app_id,
            kind: 'billing.cap_warned',
            fields: { window: n.period, pct: Number(n.notice.slice(5)) },
          },
  );
}

/**
 * `billing.usage_recorded` goes to the app that made the calls; a Connection Key's calls go to
 * the apps bound to its connection. (A CLI key's calls have no app to tell.)
 */
async function usageEvents(trx: Transaction<Database>, settlements: Settlement[]): Promise<EventDraft[]> {
  const viaConnection = [
    ...new Set(settlements.filter((s) => !s.appId && s.connectionId).map((s) => s.connectionId!)),
  ];
  const bound = viaConnection.length
    ? await trx
        .selectFrom('app_connections')
        .select(['app_id', 'connection_id'])
        .where('connection_id', 'in', viaConnection)
        .execute()
    : [];
  // One event per app and provider per batch, its micros the batch's sum: a busy app's log of
  // 100 keeps room for the connection events that matter more than each single call.
  const totals = new Map<string, { appId: string; provider: string; micros: number }>();
  for (const s of settlements) {
    const appIds = s.appId
      ? [s.appId]
      : bound.filter((b) => b.connection_id === s.connectionId).map((b) => b.app_id);
    for (const appId of appIds) {
      const key = `${appId}|${s.provider}`;
      const total = totals.get(key) ?? { appId, provider: s.provider, micros: 0 };
      total.micros += s.costMicros;
      totals.set(key, total);
    }
  }
  return [...totals.values()].map(
    (t): EventDraft => ({
      appId: t.appId,
      kind: 'billing.usage_recorded',
      fields: { provider: t.provider, micros: t.micros },
    }),
  );
}

/** Drops the calls' own hold rows, and shrinks leases by what their newly settled calls held. */
async function letGoOfHolds(
  trx: Transaction<Database>,
  settlements: Settlement[],
  fresh: Settlement[],
): Promise<void> {
  const own = settlements.filter((s) => s.leaseId === null).map((s) => s.usageId);
  if (own.length > 0) await trx.deleteFrom('holds').where('id', 'in', own).execute();
  const byLease = new Map<string, number>();
  for (const s of fresh) if (s.leaseId) byLease.set(s.leaseId, (byLease.get(s.leaseId) ?? 0) + s.holdMicros);
  for (const [leaseId, micros] of [...byLease.entries()].sort()) {
    await trx
      .updateTable('holds')
      .set({ amount_micros: sql`greatest(0, amount_micros - ${micros})` })
      .where('id', '=', leaseId)
      .execute();
  }
}
