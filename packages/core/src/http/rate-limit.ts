export interface RateLimitRule {
  /** Requests admitted per window. */
  limit: number;
  /** Window length in milliseconds. */
  windowMs: number;
}

export interface RateLimitVerdict {
  allowed: boolean;
  /** Hits in the current window as far as this instance knows, this one included. */
  hits: number;
  /** Seconds until the window resets. */
  retryAfterSeconds: number;
}

/** Hits to add to one window of one bucket. */
export interface WindowHits {
  bucket: string;
  /** Start of the window, ms since the epoch. */
  windowStart: number;
  hits: number;
}

/**
 * Where the shared counts live (the store, for every instance to see the same hits). `add` must
 * be atomic per window: each window's total includes every hit added before it, on any instance.
 * The limiter passes windows in one fixed order (by start, then bucket), so two instances'
 * writes never wait on each other's rows in opposite orders.
 */
export interface RateLimitCounter {
  /** Adds each window's hits (a new window starts at zero); resolves to each window's new total, in order. */
  add(windows: WindowHits[]): Promise<number[]>;
  /** Deletes the windows that started before `before` (ms since the epoch). */
  sweep(before: number): Promise<void>;
}

export interface RateLimiterOptions {
  now?: () => number;
  /**
   * How old this instance's view of a shared count may be for a hit below half the limit to be
   * answered before it is counted. Default 250 ms.
   */
  freshViewMs?: number;
}

/** One window of one bucket, as this instance sees it. */
interface WindowView {
  bucket: string;
  windowStart: number;
  windowEnd: number;
  /** The shared count after this instance's last write, and when that was. */
  known: number;
  knownAt: number;
  /** Hits taken here and not yet written. */
  queued: number;
}

/** A hit waiting for its place in the shared count. */
interface QueuedHit {
  view: WindowView;
  rule: RateLimitRule;
  /** Set for hits answered only once counted; absent for hits already admitted. */
  settle?: (verdict: RateLimitVerdict) => void;
  fail?: (error: unknown) => void;
}

const SWEEP_EVERY_WRITES = 1000;
const SWEEP_AGE_MS = 60 * 60 * 1000;
/** Hits admitted at once are written at most this long after they arrive, many in one upsert. */
const ADMITTED_WRITE_DELAY_MS = 50;
/** How often this instance drops its views of windows that have ended. */
const FORGET_EVERY_MS = 5000;

/**
 * Fixed-window counters kept in a shared counter (the store), so every instance sharing it
 * counts the same hits.
 *
 * Hits are written in batches: every hit that arrives while a write is in flight joins the next
 * one, a single `add` that returns each window's shared count. A batch's hits of one window take
 * the places just below the returned count, so each knows its exact place.
 *
 * From half a limit on, a hit is answered only once its place is known: the limit itself is
 * exact across instances. Below half, as this instance last saw the shared count (at most
 * `freshViewMs` ago, and never on its first hit of a window), a hit is admitted at once and
 * written in the next batch. A window could pass its limit only if more than half of it arrived
 * at other instances within that fraction of a second.
 *
 * @see docs/decisions.md "Rate limits"
 */
export class RateLimiter {
  readonly #views = new Map<string, WindowView>();
  #queue: QueuedHit[] = [];
  #writing = false;
  #delayedWrite: ReturnType<typeof setTimeout> | undefined;
  #writes = 0;
  #forgottenAt = 0;
  readonly #now: () => number;
  readonly #freshViewMs: number;

  constructor(
    private readonly counter: RateLimitCounter,
    options: RateLimiterOptions | (() => number) = {},
  ) {
    const opts = typeof options === 'function' ? { now: options } : options;
    this.#now = opts.now ?? Date.now;
    this.#freshViewMs = opts.freshViewMs ?? 250;
  }

  async hit(bucket: string, rule: RateLimitRule): Promise<RateLimitVerdict> {
    const now = this.#now();
    const view = this.#viewOf(bucket, rule, now);
    const retryAfterSeconds = Math.max(1, Math.ceil((view.windowEnd - now) / 1000));
    const estimate = view.known + view.queued + 1;
    const fresh = view.knownAt > 0 && now - view.knownAt <= this.#freshViewMs;
    view.queued++;
    if (fresh && estimate <= Math.floor(rule.limit / 2)) {
      this.#enqueue({ view, rule });
      return { allowed: true, hits: estimate, retryAfterSeconds };
    }
    return new Promise<RateLimitVerdict>((settle, fail) => this.#enqueue({ view, rule, settle, fail }));
  }

  /** Deletes windows that started before `before` (ms since epoch). */
  async sweep(before: number): Promise<void> {
    await this.counter.sweep(before);
  }

  #viewOf(bucket: string, rule: RateLimitRule, now: number): WindowView {
    const windowStart = now - (now % rule.windowMs);
    const key = `${windowStart}|${bucket}`;
    let view = this.#views.get(key);
    if (!view) {
      view = { bucket, windowStart, windowEnd: windowStart + rule.windowMs, known: 0, knownAt: 0, queued: 0 };
      this.#views.set(key, view);
    }
    return view;
  }

  #enqueue(hit: QueuedHit): void {
    this.#queue.push(hit);
    if (hit.settle) this.#startWriting();
    else this.#armDelayedWrite();
  }

  #armDelayedWrite(): void {
    if (this.#delayedWrite || this.#writing) return;
    this.#delayedWrite = setTimeout(() => {
      this.#delayedWrite = undefined;
      this.#startWriting();
    }, ADMITTED_WRITE_DELAY_MS);
    this.#delayedWrite.unref?.();
  }

  #startWriting(): void {
    // A running loop writes again while any queued hit waits.
    if (this.#writing) return;
    clearTimeout(this.#delayedWrite);
    this.#delayedWrite = undefined;
    this.#writing = true;
    // Let the hits of this turn of the event loop join the batch.
    setImmediate(() => void this.#writeBatches());
  }

  async #writeBatches(): Promise<void> {
    do {
      const batch = this.#queue;
      this.#queue = [];
      try {
        await this.#write(batch);
      } catch (error) {
        for (const hit of batch) {
          hit.view.queued--;
          hit.fail?.(error);
        }
      }
    } while (this.#queue.some((hit) => hit.settle));
    this.#writing = false;
    // Hits admitted at once meanwhile wait for the delayed write, so a busy instance writes them
    // a few times a second, not once per request.
    if (this.#queue.length > 0) this.#armDelayedWrite();
    this.#forgetEndedWindows();
  }

  async #write(batch: QueuedHit[]): Promise<void> {
    const byWindow = new Map<WindowView, QueuedHit[]>();
    for (const hit of batch) {
      const hits = byWindow.get(hit.view);
      if (hits) hits.push(hit);
      else byWindow.set(hit.view, [hit]);
    }
    // A fixed window order keeps two instances' batches from deadlocking on each other's rows.
    const views = [...byWindow.keys()].sort(
      (a, b) => a.windowStart - b.windowStart || (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : 0),
    );
    const totals = await this.counter.add(
      views.map((view) => ({
        bucket: view.bucket,
        windowStart: view.windowStart,
        hits: byWindow.get(view)!.length,
      })),
    );
    const now = this.#now();
    for (const [i, view] of views.entries()) {
      const hits = byWindow.get(view)!;
      const total = totals[i] ?? 0;
      view.known = total;
      view.knownAt = now;
      view.queued -= hits.length;
      // Hits admitted at once took their places first; waiting hits follow in arrival order.
      const waiting = hits.filter((hit) => hit.settle);
      let place = total - waiting.length;
      for (const hit of waiting) {
        place++;
        hit.settle!({
          allowed: place <= hit.rule.limit,
          hits: place,
          retryAfterSeconds: Math.max(1, Math.ceil((view.windowEnd - now) / 1000)),
        });
      }
    }
    if (++this.#writes % SWEEP_EVERY_WRITES === 0) {
      // Housekeeping only: a failed sweep is retried a thousand writes later.
      this.sweep(now - SWEEP_AGE_MS).catch(() => {});
    }
  }

  #forgetEndedWindows(): void {
    const now = this.#now();
    if (now - this.#forgottenAt < FORGET_EVERY_MS) return;
    this.#forgottenAt = now;
    for (const [key, view] of this.#views) {
      if (view.windowEnd <= now && view.queued === 0) this.#views.delete(key);
    }
  }
}
