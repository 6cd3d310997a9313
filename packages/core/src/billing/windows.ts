import type { SpendPeriod } from '../store/database.js';

/**
 * UTC spend windows: a day from 00:00Z, a month from the 1st at 00:00Z.
 *
 * @see docs/billing.md "Spend caps"
 */
export interface SpendWindow {
  period: SpendPeriod;
  /** `YYYY-MM-DD`: the day, or the first day of the month. */
  start: string;
  /** When the next window starts. */
  resetsAt: Date;
}

export const SPEND_PERIODS: readonly SpendPeriod[] = ['daily', 'monthly'];

export function spendWindow(period: SpendPeriod, at: Date): SpendWindow {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  if (period === 'daily') {
    const d = at.getUTCDate();
    return { period, start: isoDate(y, m, d), resetsAt: new Date(Date.UTC(y, m, d + 1)) };
  }
  return { period, start: isoDate(y, m, 1), resetsAt: new Date(Date.UTC(y, m + 1, 1)) };
}

function isoDate(y: number, m: number, d: number): string {
  return new Date(Date.UTC(y, m, d)).toISOString().slice(0, 10);
}

/** Start of the ISO week (Monday 00:00Z) containing `at`. */
export function isoWeekStart(at: Date): Date {
  const day = (at.getUTCDay() + 6) % 7; // Monday = 0
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() - day));
}

export function dayStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
}

export function monthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

/**
 * The notices a window's spend calls for: `warn:<pct>` for each threshold reached, and `tripped`
 * once the cap is reached. Sent once each per window (the store remembers which were sent).
 */
export function noticesFor(spentMicros: number, capMicros: number, warnPcts: number[]): string[] {
  const notices = warnPcts.filter((pct) => spentMicros * 100 >= capMicros * pct).map((pct) => `warn:${pct}`);
  if (spentMicros >= capMicros) notices.push('tripped');
  return notices;
}
