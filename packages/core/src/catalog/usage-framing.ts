import { type Kysely, sql } from 'kysely';
import type { Database } from '../store/database.js';

/** The credit presets the framing speaks of, in USD. */
export const USAGE_FRAMING_PRESETS_USD = [5, 25, 100] as const;
/** How far back a tool's spend counts. */
const HISTORY_MS = 30 * 24 * 60 * 60 * 1000;
/** A typical metered call when nothing of the category has history either: USD 0.002. */
const DEFAULT_CALL_COST_MICROS = 2_000;

export interface UsageFramingEntry {
  usd: number;
  label: string;
  cold_start: boolean;
}

/**
 * What each preset buys of a tool, in metered calls: from the average cost of a call its apps made
 * over the last 30 days; without any (`cold_start`), from the average over the other tools of its
 * category, else from a typical call of USD 0.002.
 */
export async function usageFramingOf(
  db: Kysely<Database>,
  tool: { id: string; category: string },
  now: number,
): Promise<UsageFramingEntry[]> {
  const since = new Date(now - HISTORY_MS);
  const own = await averageCallCost(db, since, { toolId: tool.id });
  const coldStart = own === null;
  const perCall =
    own ?? (await averageCallCost(db, since, { category: tool.category })) ?? DEFAULT_CALL_COST_MICROS;
  return USAGE_FRAMING_PRESETS_USD.map((usd) => ({
    usd,
    label: callsLabel((usd * 1_000_000) / Math.max(perCall, 1)),
    cold_start: coldStart,
  }));
}

/** Average cost in micros of a metered call by apps of one tool, or of any tool of a category. */
async function averageCallCost(
  db: Kysely<Database>,
  since: Date,
  of: { toolId: string } | { category: string },
): Promise<number | null> {
  const row = await db
    .selectFrom('usage_events as u')
    .innerJoin('apps as a', 'a.id', 'u.app_id')
    .innerJoin('tools as t', 't.id', 'a.tool_id')
    .select([sql<string>`sum(u.cost_micros)`.as('cost'), sql<string>`count(*)`.as('calls')])
    .where('u.created_at', '>=', since)
    .where('u.cost_micros', '>', 0)
    .where('toolId' in of ? 't.id' : 't.category', '=', 'toolId' in of ? of.toolId : of.category)
    .executeTakeFirst();
  const calls = Number(row?.calls ?? 0);
  return calls > 0 ? Number(row?.cost) / calls : null;
}

/** "About 1,200 calls": two significant figures, grouped, never below one. */
export function callsLabel(calls: number): string {
  if (calls < 1) return 'Less than 1 call';
  const digits = Math.floor(Math.log10(calls));
  const step = 10 ** Math.max(digits - 1, 0);
  const rounded = Math.max(Math.round(calls / step) * step, 1);
  return `About ${rounded.toLocaleString('en-US')} ${rounded === 1 ? 'call' : 'calls'}`;
}
