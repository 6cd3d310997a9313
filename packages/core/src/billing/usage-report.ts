import { type Kysely, sql } from 'kysely';
import type { Database, MeterName } from '../store/database.js';
import { dayStart, isoWeekStart, monthStart } from './windows.js';

/**
 * Usage rollups behind the dashboard's billing and usage endpoints, read from `usage_events`
 * (one row per billed call). All windows are UTC.
 *
 * @see docs/api/billing.md
 */
export type UsageRange = '1h' | '24h' | '7d' | '30d';

/** Each range's length and bucket size. */
export const USAGE_RANGES: Record<UsageRange, { ms: number; bucketMs: number }> = {
  '1h': { ms: 3_600_000, bucketMs: 300_000 },
  '24h': { ms: 86_400_000, bucketMs: 3_600_000 },
  '7d': { ms: 7 * 86_400_000, bucketMs: 86_400_000 },
  '30d': { ms: 30 * 86_400_000, bucketMs: 86_400_000 },
};

interface UsageRow {
  provider: string;
  quantities: Partial<Record<MeterName, number>>;
  meter_costs: Partial<Record<MeterName, number>>;
  cost_micros: number;
  created_at: Date;
}

/**
 * `GET /api/deployments/{id}/usage`: per provider totals, per period totals with per-meter
 * quantity and cost (numeric strings, micros), and a summary (a number, micros).
 */
export async function deploymentUsage(db: Kysely<Database>, appId: string, range: UsageRange, now: Date) {
  const { ms, bucketMs } = USAGE_RANGES[range];
  // Buckets align to their size (whole hours, whole UTC days); the first may start before `from`.
  const to = now.getTime();
  const firstBucket = Math.floor((to - ms) / bucketMs) * bucketMs + bucketMs;
  const from = new Date(to - ms);
  const rows: UsageRow[] = await db
    .selectFrom('usage_events')
    .select(['provider', 'quantities', 'meter_costs', 'cost_micros', 'created_at'])
    .where('app_id', '=', appId)
    .where('created_at', '>', from)
    .where('created_at', '<=', now)
    .orderBy('created_at')
    .execute();

  const providers = new Map<string, { events: number; cost: number; meters: Map<string, number> }>();
  const buckets = new Map<
    number,
    { events: number; cost: number; meters: Map<string, { quantity: number; cost: number }> }
  >();
  for (let start = firstBucket - bucketMs; start < to; start += bucketMs) {
    buckets.set(start, { events: 0, cost: 0, meters: new Map() });
  }
  for (const row of rows) {
    const p = providers.get(row.provider) ?? { events: 0, cost: 0, meters: new Map() };
    p.events++;
    p.cost += row.cost_micros;
    const at = new Date(row.created_at).getTime();
    const bucket = buckets.get(Math.floor(at / bucketMs) * bucketMs);
    if (bucket) {
      bucket.events++;
      bucket.cost += row.cost_micros;
    }
    for (const [meter, quantity] of Object.entries(row.quantities)) {
      p.meters.set(meter, (p.meters.get(meter) ?? 0) + (quantity ?? 0));
      if (!bucket) continue;
      const key = `${row.provider}|${meter}`;
      const m = bucket.meters.get(key) ?? { quantity: 0, cost: 0 };
      m.quantity += quantity ?? 0;
      m.cost += row.meter_costs[meter as MeterName] ?? 0;
      bucket.meters.set(key, m);
    }
    providers.set(row.provider, p);
  }
  const total = rows.reduce((sum, r) => sum + r.cost_micros, 0);
  return {
    providers: [...providers.entries()].map(([provider, p]) => ({
      provider,
      events: p.events,
      cost: String(p.cost),
      meters: [...p.meters.entries()].map(([meter, quantity]) => ({ meter, quantity: String(quantity) })),
    })),
    periods: [...buckets.entries()].map(([start, b]) => ({
      start: new Date(Math.max(start, from.getTime())).toISOString(),
      end: new Date(Math.min(start + bucketMs, to)).toISOString(),
      events: b.events,
      totalCost: String(b.cost),
      meters: [...b.meters.entries()].map(([key, m]) => {
        const [provider, meter] = key.split('|');
        return { provider, meter, quantity: String(m.quantity), cost: String(m.cost) };
      }),
    })),
    summary: {
      range,
      from: from.toISOString(),
      to: now.toISOString(),
      events: rows.length,
      totalCost: total,
      unit: 'micros',
      currency: 'USD',
    },
  };
}

/** `GET /api/integrations/{slug}/usage`: a 30-day daily trend and day / ISO-week / month spend in USD. */
export async function integrationUsage(
  db: Kysely<Database>,
  tenantId: string,
  provider: string,
  tokenMetered: boolean,
  now: Date,
) {
  const today = dayStart(now);
  const trendFrom = new Date(today.getTime() - 29 * 86_400_000);
  const since = new Date(
    Math.min(trendFrom.getTime(), isoWeekStart(now).getTime(), monthStart(now).getTime()),
  );
  const rows = await db
    .selectFrom('usage_events')
    .select(['quantities', 'cost_micros', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('provider', '=', provider)
    .where('created_at', '>=', since)
    .execute();
  const days = new Map<string, { events: number; cost: number }>();
  for (let i = 0; i < 30; i++) {
    days.set(new Date(trendFrom.getTime() + i * 86_400_000).toISOString().slice(0, 10), {
      events: 0,
      cost: 0,
    });
  }
  const spentSince = (start: Date) =>
    rows.filter((r) => new Date(r.created_at) >= start).reduce((sum, r) => sum + r.cost_micros, 0);
  let input = 0;
  let output = 0;
  for (const row of rows) {
    const day = days.get(new Date(row.created_at).toISOString().slice(0, 10));
    if (day) {
      day.events++;
      day.cost += row.cost_micros;
    }
    if (new Date(row.created_at) >= trendFrom) {
      input += row.quantities.input_tokens ?? 0;
      output += row.quantities.output_tokens ?? 0;
    }
  }
  const usd = (micros: number) => Math.round(micros / 10_000) / 100;
  return {
    provider: tokenMetered
      ? {
          source: 'usage_events',
          events: [...days.values()].reduce((n, d) => n + d.events, 0),
          input_tokens: input,
          output_tokens: output,
        }
      : null,
    dailyTrend: [...days.entries()].map(([date, d]) => ({ date, events: d.events, cost: d.cost })),
    spend_daily_usd: usd(spentSince(today)),
    spend_weekly_usd: usd(spentSince(isoWeekStart(now))),
    spend_monthly_usd: usd(spentSince(monthStart(now))),
  };
}

/** `GET /api/billing/usage`: a tenant's spend over the last `days` days, by provider, app and day. */
export async function tenantUsage(db: Kysely<Database>, tenantId: string, days: number, now: Date) {
  const from = new Date(dayStart(now).getTime() - (days - 1) * 86_400_000);
  const base = db
    .selectFrom('usage_events')
    .where('usage_events.tenant_id', '=', tenantId)
    .where('usage_events.created_at', '>=', from);
  const [byProvider, byApp, byDay] = await Promise.all([
    base
      .select([
        'provider',
        (eb) => eb.fn.countAll<number>().as('events'),
        (eb) => eb.fn.sum<number>('cost_micros').as('cost'),
      ])
      .groupBy('provider')
      .orderBy('provider')
      .execute(),
    base
      .leftJoin('apps', 'apps.id', 'usage_events.app_id')
      .select([
        'usage_events.app_id',
        'apps.slug',
        (eb) => eb.fn.countAll<number>().as('events'),
        (eb) => eb.fn.sum<number>('usage_events.cost_micros').as('cost'),
      ])
      .groupBy(['usage_events.app_id', 'apps.slug'])
      .orderBy('apps.slug')
      .execute(),
    base
      .select([
        sql<string>`to_char(usage_events.created_at at time zone 'UTC', 'YYYY-MM-DD')`.as('day'),
        'provider',
        (eb) => eb.fn.countAll<number>().as('events'),
        (eb) => eb.fn.sum<number>('cost_micros').as('cost'),
      ])
      .groupBy(['day', 'provider'])
      .execute(),
  ]);
  const daily = new Map<
    string,
    { events: number; cost_micros: number; by_provider: Record<string, number> }
  >();
  for (const row of byDay) {
    const day = daily.get(row.day) ?? { events: 0, cost_micros: 0, by_provider: {} };
    day.events += Number(row.events);
    day.cost_micros += Number(row.cost);
    day.by_provider[row.provider] = Number(row.cost);
    daily.set(row.day, day);
  }
  const series = Array.from({ length: days }, (_, i) => {
    const date = new Date(from.getTime() + i * 86_400_000).toISOString().slice(0, 10);
    return { date, ...(daily.get(date) ?? { events: 0, cost_micros: 0, by_provider: {} }) };
  });
  return {
    from: from.toISOString(),
    to: now.toISOString(),
    total_micros: series.reduce((sum, d) => sum + d.cost_micros, 0),
    events: series.reduce((sum, d) => sum + d.events, 0),
    by_provider: byProvider.map((p) => ({
      provider: p.provider,
      events: Number(p.events),
      cost_micros: Number(p.cost),
    })),
    by_app: byApp.map((a) => ({
      app_id: a.app_id,
      app_slug: a.slug,
      events: Number(a.events),
      cost_micros: Number(a.cost),
    })),
    daily: series,
  };
}

/** `GET /api/billing/burn-rate`: spend in the last hour and day, the hourly average and the runway. */
export async function burnRate(db: Kysely<Database>, tenantId: string, balanceMicros: number, now: Date) {
  const dayAgo = new Date(now.getTime() - 86_400_000);
  const hourAgo = new Date(now.getTime() - 3_600_000);
  const row = await db
    .selectFrom('usage_events')
    .select([
      (eb) => eb.fn.sum<number>('cost_micros').as('day'),
      sql<number>`sum(cost_micros) filter (where created_at > ${hourAgo})`.as('hour'),
    ])
    .where('tenant_id', '=', tenantId)
    .where('created_at', '>', dayAgo)
    .executeTakeFirst();
  const lastDay = Number(row?.day ?? 0);
  const perHour = Math.round(lastDay / 24);
  return {
    spent_last_hour_micros: Number(row?.hour ?? 0),
    spent_last_24h_micros: lastDay,
    micros_per_hour: perHour,
    balance_micros: balanceMicros,
    runway_hours: perHour > 0 ? Math.max(0, Math.floor((balanceMicros / perHour) * 10) / 10) : null,
  };
}
