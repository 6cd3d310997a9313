import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.js';

/**
 * This server instance's heartbeat in the store. Each instance keeps an `instances` row alive;
 * holds and event-stream slots carry the id of the instance that took them. When an instance
 * stops beating (SIGKILL, a lost machine), the others let go of its credit and its stream slots
 * within `ttlMs` plus one beat, instead of waiting for each row's own expiry.
 *
 * Two guards keep a live instance's rows from being taken for a dead one's:
 * - An instance reaps others only once its beats have landed without a gap for `ttlMs`, counted
 *   from a landing. A beat that took longer than two beats to land, or found its own row lapsed,
 *   starts the count again. After a database outage or stall, or a stall of its own, every live
 *   instance has had a full `ttlMs` to beat again before anyone is judged dead.
 * - An instance whose own last beat is older than `ttlMs - beatMs` is not `fresh()`: it stops
 *   admitting calls from memory (its leases) until a beat lands, and a beat that finds its row
 *   lapsed reports it (`onLapsed`), since its holds may have been reaped meanwhile.
 *
 * Liveness is judged on the database's clock (`now()`), so the instances' clocks need not agree.
 *
 * @see docs/billing.md "Crash safety"
 */
export interface InstanceHeartbeatOptions {
  /** How often the row is renewed. Default 2 s. */
  beatMs?: number;
  /** How long past its last beat an instance counts as alive. Default 6 s. */
  ttlMs?: number;
  /** Called when a beat finds this instance's row had lapsed: its holds may have been let go. */
  onLapsed?: () => void;
  /** A beat or a reap that failed (the store away); the next beat tries again. */
  onError?: (error: unknown) => void;
}

export interface InstanceHeartbeat {
  readonly id: string;
  /** True while no other instance can have judged this one dead. */
  fresh(): boolean;
  /**
   * Times this instance's row may have been let go: a beat found it lapsed, or `stop()` removed
   * it. While `fresh()` stays true and this count does not move, no other instance has judged
   * this one dead since the count was read.
   */
  readonly lapses: number;
  /**
   * True once this instance has beaten without a gap for `ttlMs`: only then may it judge others
   * dead (let go of their holds, take over their settlement journals), since every live instance
   * has had a full `ttlMs` to beat again after an outage.
   */
  mayJudgeOthers(): boolean;
  /** One beat (and reap) now; the timer calls it every `beatMs`. */
  beat(): Promise<void>;
  /** Stops beating and removes the row: what the instance still holds is let go by the others. */
  stop(): Promise<void>;
}

/** Rows of instances gone this long are deleted (their holds and slots went at once). */
const FORGET_AFTER = '1 day';

export async function startInstanceHeartbeat(
  db: Kysely<Database>,
  options: InstanceHeartbeatOptions = {},
): Promise<InstanceHeartbeat> {
  const id = randomUUID();
  const beatMs = options.beatMs ?? 2000;
  const ttlMs = options.ttlMs ?? 6000;
  if (!(beatMs > 0 && ttlMs > beatMs)) throw new RangeError('ttlMs must be longer than beatMs');
  const aliveUntil = sql<Date>`now() + ${`${ttlMs} milliseconds`}::interval`;
  /** Local time the last successful beat was sent (before the database stamped it). */
  let lastBeatSentAt = 0;
  /** Since when beats have landed without a gap (local time of the landing); null after a failure. */
  let beatingSince: number | null = null;
  let lapses = 0;
  let running: Promise<void> | null = null;
  let stopped = false;

  const renew = async (): Promise<void> => {
    const sentAt = Date.now();
    let lapsed = false;
    const renewed = await db
      .updateTable('instances')
      .set({ alive_until: aliveUntil })
      .where('id', '=', id)
      .where('alive_until', '>', sql<Date>`now()`)
      .executeTakeFirst();
    if (renewed.numUpdatedRows === 0n) {
      await db
        .insertInto('instances')
        .values({ id, alive_until: aliveUntil })
        .onConflict((oc) => oc.column('id').doUpdateSet({ alive_until: aliveUntil }))
        .execute();
      if (lastBeatSentAt > 0) {
        lapsed = true;
        lapses++;
        options.onLapsed?.();
      }
    }
    const landedAt = Date.now();
    // The count towards reaping is of beats that landed in time. It restarts, at this landing,
    // after a gap longer than two beats between sends (this process stalled), a beat that took
    // longer than that to land (the database or the network stalled: sent just before, it lands
    // just after, with no gap between sends), or a beat that found this row lapsed (the others
    // may have counted this instance dead, as it may them): every live instance then has a full
    // `ttlMs` to beat again before this one judges it.
    if (
      beatingSince === null ||
      lapsed ||
      sentAt - lastBeatSentAt > 2 * beatMs ||
      landedAt - sentAt > 2 * beatMs
    ) {
      beatingSince = landedAt;
    }
    lastBeatSentAt = sentAt;
  };

  const reap = async (): Promise<void> => {
    const dead = (table: 'holds' | 'event_streams') =>
      db
        .deleteFrom(table)
        .where('instance_id', 'is not', null)
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom('instances')
                .select('instances.id')
                .whereRef('instances.id', '=', `${table}.instance_id`)
                .where('instances.alive_until', '>', sql<Date>`now()`),
            ),
          ),
        )
        .execute();
    await dead('holds');
    await dead('event_streams');
    await db
      .deleteFrom('instances')
      .where('alive_until', '<', sql<Date>`now() - ${FORGET_AFTER}::interval`)
      .execute();
  };

  const mayJudgeOthers = () => beatingSince !== null && Date.now() - beatingSince >= ttlMs;

  const beat = (): Promise<void> => {
    running ??= (async () => {
      try {
        await renew();
        if (mayJudgeOthers()) await reap();
      } catch (error) {
        beatingSince = null;
        options.onError?.(error);
      } finally {
        running = null;
      }
    })();
    return running;
  };

  await renew();
  const timer = setInterval(() => {
    if (!stopped) void beat();
  }, beatMs);
  timer.unref?.();

  return {
    id,
    fresh: () => Date.now() - lastBeatSentAt < ttlMs - beatMs,
    get lapses() {
      return lapses;
    },
    mayJudgeOthers,
    beat,
    async stop() {
      stopped = true;
      // Counted before the row goes: the others may take what this instance holds from then on.
      lapses++;
      clearInterval(timer);
      await running;
      await db
        .deleteFrom('instances')
        .where('id', '=', id)
        .execute()
        .catch((error: unknown) => options.onError?.(error));
    },
  };
}

/**
 * Which of these instances no longer beat: their row lapsed or is gone (stopped, or forgotten a
 * day after it lapsed). Judged on the database's clock.
 */
export async function lapsedInstances(db: Kysely<Database>, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const alive = await db
    .selectFrom('instances')
    .select('id')
    .where('id', 'in', ids)
    .where('alive_until', '>', sql<Date>`now()`)
    .execute();
  const live = new Set(alive.map((row) => row.id));
  return new Set(ids.filter((id) => !live.has(id)));
}
