import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { SPEND_PERIODS, spendWindow } from './windows.js';

/**
 * Per-app spend caps (daily and monthly, micros, UTC windows) as the dashboard reads and writes
 * them. Enforcement is in the metering engine.
 *
 * @see docs/api/billing.md "Spend caps"
 */
export interface SpendCapView {
  app_id: string;
  app_slug: string;
  app_name: string;
  daily_micros: number | null;
  monthly_micros: number | null;
  warn_pcts: number[];
  spent: { daily_micros: number; monthly_micros: number };
  resets_at: { daily: string; monthly: string };
}

export interface SpendCapInput {
  appId: string;
  dailyMicros: number | null;
  monthlyMicros: number | null;
  warnPcts?: number[];
}

export const DEFAULT_WARN_PCTS = [50, 80];

/** Every app of the tenant with its caps (null: none) and its spend in the current windows. */
export async function listSpendCaps(
  db: Kysely<Database>,
  tenantId: string,
  now: Date,
): Promise<SpendCapView[]> {
  const windows = SPEND_PERIODS.map((period) => spendWindow(period, now));
  const apps = await db
    .selectFrom('apps')
    .leftJoin('spend_caps', 'spend_caps.app_id', 'apps.id')
    .select([
      'apps.id',
      'apps.slug',
      'apps.name',
      'spend_caps.daily_micros',
      'spend_caps.monthly_micros',
      'spend_caps.warn_pcts',
    ])
    .where('apps.tenant_id', '=', tenantId)
    .orderBy('apps.slug')
    .execute();
  const spend = apps.length
    ? await db
        .selectFrom('app_spend')
        .select(['app_id', 'period', 'spent_micros'])
        .where(
          'app_id',
          'in',
          apps.map((a) => a.id),
        )
        .where((eb) =>
          eb.or(windows.map((w) => eb.and([eb('period', '=', w.period), eb('period_start', '=', w.start)]))),
        )
        .execute()
    : [];
  const spentOf = (appId: string, period: string) =>
    spend.find((s) => s.app_id === appId && s.period === period)?.spent_micros ?? 0;
  return apps.map((app) => ({
    app_id: app.id,
    app_slug: app.slug,
    app_name: app.name,
    daily_micros: app.daily_micros ?? null,
    monthly_micros: app.monthly_micros ?? null,
    warn_pcts: app.warn_pcts ?? DEFAULT_WARN_PCTS,
    spent: { daily_micros: spentOf(app.id, 'daily'), monthly_micros: spentOf(app.id, 'monthly') },
    resets_at: { daily: windows[0]!.resetsAt.toISOString(), monthly: windows[1]!.resetsAt.toISOString() },
  }));
}

/**
 * Sets an app's caps; false when the app is not the tenant's. Both caps null removes them. A cap
 * whose value changes (set, raised, lowered or cleared) forgets the notices its current window
 * has sent, in the same transaction: they were about the old cap, and the new one's thresholds
 * are announced afresh when the window's spend crosses them.
 */
export async function setSpendCap(
  db: Kysely<Database>,
  tenantId: string,
  input: SpendCapInput,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const app = await trx
      .selectFrom('apps')
      .select('id')
      .where('id', '=', input.appId)
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst();
    if (!app) return false;
    // Locked: two owners changing the same cap at once each compare with what the other wrote.
    const before = await trx
      .selectFrom('spend_caps')
      .select(['daily_micros', 'monthly_micros'])
      .where('app_id', '=', input.appId)
      .forUpdate()
      .executeTakeFirst();
    const now = new Date();
    const changed = SPEND_PERIODS.filter((period) =>
      period === 'daily'
        ? (before?.daily_micros ?? null) !== input.dailyMicros
        : (before?.monthly_micros ?? null) !== input.monthlyMicros,
    ).map((period) => spendWindow(period, now));
    if (changed.length > 0) {
      await trx
        .deleteFrom('cap_notices')
        .where('app_id', '=', input.appId)
        .where((eb) =>
          eb.or(changed.map((w) => eb.and([eb('period', '=', w.period), eb('period_start', '=', w.start)]))),
        )
        .execute();
    }
    if (input.dailyMicros === null && input.monthlyMicros === null) {
      await trx.deleteFrom('spend_caps').where('app_id', '=', input.appId).execute();
      return true;
    }
    const row = {
      app_id: input.appId,
      tenant_id: tenantId,
      daily_micros: input.dailyMicros,
      monthly_micros: input.monthlyMicros,
      warn_pcts: JSON.stringify([...new Set(input.warnPcts ?? DEFAULT_WARN_PCTS)].sort((a, b) => a - b)),
      updated_at: now,
    };
    await trx
      .insertInto('spend_caps')
      .values(row)
      .onConflict((oc) => oc.column('app_id').doUpdateSet(row))
      .execute();
    return true;
  });
}
