import { type Kysely, sql } from 'kysely';
import type { Database } from './database.js';

/**
 * The rate limiter's shared counts in the store (`rate_limit_hits`): one row per bucket and
 * window, so every instance sharing the database counts the same hits. Fits the rate limiter's
 * counter seam (`RateLimitCounter`).
 *
 * @see docs/decisions.md "Rate limits"
 */
export function createRateLimitCounter(db: Kysely<Database>) {
  return {
    /** One upsert for every window; each window's total after it, in the order given. */
    async add(windows: { bucket: string; windowStart: number; hits: number }[]): Promise<number[]> {
      const rows = await db
        .insertInto('rate_limit_hits')
        .values(
          windows.map((window) => ({
            bucket: window.bucket,
            window_start: new Date(window.windowStart),
            hits: window.hits,
          })),
        )
        .onConflict((oc) =>
          oc
            .columns(['bucket', 'window_start'])
            .doUpdateSet({ hits: sql`rate_limit_hits.hits + excluded.hits` }),
        )
        .returning(['bucket', 'window_start', 'hits'])
        .execute();
      const totals = new Map(
        rows.map((row) => [`${new Date(row.window_start).getTime()}|${row.bucket}`, row.hits]),
      );
      return windows.map((window) => totals.get(`${window.windowStart}|${window.bucket}`) ?? 0);
    },

    /** Deletes windows that started before `before` (ms since the epoch). */
    async sweep(before: number): Promise<void> {
      await db.deleteFrom('rate_limit_hits').where('window_start', '<', new Date(before)).execute();
    },
  };
}
