import { type Kysely, sql } from 'kysely';
import type { Database } from '../store/database.js';

export interface RateLimitRule {
  /** Requests admitted per window. */
  limit: number;
  /** Window length in milliseconds. */
  windowMs: number;
}

export interface RateLimitVerdict {
  allowed: boolean;
  /** Hits in the current window, this one included. */
  hits: number;
  /** Seconds until the window resets. */
  retryAfterSeconds: number;
}

/**
 * Fixed-window counters kept in the store, so every instance sharing the database counts the
 * same hits. One upsert per request; old windows are swept now and then.
 */
export class RateLimiter {
  #sinceSweep = 0;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number = Date.now,
  ) {}

  async hit(bucket: string, rule: RateLimitRule): Promise<RateLimitVerdict> {
    const now = this.now();
    const windowStart = now - (now % rule.windowMs);
    const row = await this.db
      .insertInto('rate_limit_hits')
      .values({ bucket, window_start: new Date(windowStart), hits: 1 })
      .onConflict((oc) =>
        oc.columns(['bucket', 'window_start']).doUpdateSet({ hits: sql`rate_limit_hits.hits + 1` }),
      )
      .returning('hits')
      .executeTakeFirstOrThrow();
    if (++this.#sinceSweep >= 1000) {
      this.#sinceSweep = 0;
      await this.sweep(now - 60 * 60 * 1000);
    }
    return {
      allowed: row.hits <= rule.limit,
      hits: row.hits,
      retryAfterSeconds: Math.max(1, Math.ceil((windowStart + rule.windowMs - now) / 1000)),
    };
  }

  /** Deletes windows that started before `before` (ms since epoch). */
  async sweep(before: number): Promise<void> {
    await this.db.deleteFrom('rate_limit_hits').where('window_start', '<', new Date(before)).execute();
  }
}
