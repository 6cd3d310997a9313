/**
 * An expiring map for the short in-memory caches in front of the store (keys, balances, grants,
 * providers). An entry is served while the clock is before its expiry and dropped when read after
 * it; nothing runs in the background. With `maxEntries`, a write into a full cache first drops
 * the entry written longest ago, so a flood of distinct keys cannot grow memory without bound.
 *
 * `undefined` means "not cached": store `null` for a cached "nothing there".
 *
 * @example
 * const providers = new TtlCache<string, ProviderConfig | null>({ ttlMs: 5000, maxEntries: 1000 });
 * const hit = providers.get(slug);
 * if (hit !== undefined) return hit;
 */
export interface TtlCacheOptions {
  /** How long an entry lives unless `set` gives it its own lifetime. 0 or less caches nothing. */
  ttlMs: number;
  /** Most entries kept. Default: no bound. */
  maxEntries?: number;
  /** Milliseconds since the epoch; injectable for tests. Default `Date.now`. */
  now?: () => number;
  /**
   * How long past its lifetime an entry is still kept for `stale`: the last known value, for a
   * reader whose store cannot be asked. `get` never answers it. Default 0 (dropped on expiry).
   */
  staleMs?: number;
}

interface Entry<V> {
  value: V;
  expiresAt: number;
  /** Until when `stale` answers it. */
  keptUntil: number;
}

export class TtlCache<K, V> {
  readonly #entries = new Map<K, Entry<V>>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #staleMs: number;

  constructor(options: TtlCacheOptions) {
    this.#ttlMs = options.ttlMs;
    this.#staleMs = options.staleMs ?? 0;
    this.#maxEntries = options.maxEntries ?? Number.POSITIVE_INFINITY;
    this.#now = options.now ?? Date.now;
  }

  /** The live value, or undefined when absent or expired (an expired entry is dropped). */
  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    const now = this.#now();
    if (entry.expiresAt > now) return entry.value;
    if (entry.keptUntil <= now) this.#entries.delete(key);
    return undefined;
  }

  /**
   * The value even past its lifetime, within the cache's `staleMs` (or the entry's own) of it:
   * only for when the source cannot be asked. Undefined when there is none.
   */
  stale(key: K): V | undefined {
    const entry = this.#entries.get(key);
    return entry !== undefined && entry.keptUntil > this.#now() ? entry.value : undefined;
  }

  has(key: K): boolean {
    return this.get(key) !== undefined;
  }

  /**
   * Caches `value` for `ttlMs` (default the cache's), kept for `stale` `staleMs` longer (default
   * the cache's); a lifetime of 0 or less forgets the key.
   */
  set(key: K, value: V, ttlMs: number = this.#ttlMs, staleMs: number = this.#staleMs): void {
    // Deleting first keeps the map in write order, so the oldest write is the first key.
    const replaced = this.#entries.delete(key);
    if (ttlMs <= 0) return;
    if (!replaced && this.#entries.size >= this.#maxEntries) {
      this.#entries.delete(this.#entries.keys().next().value as K);
    }
    const expiresAt = this.#now() + ttlMs;
    this.#entries.set(key, { value, expiresAt, keptUntil: expiresAt + Math.max(staleMs, 0) });
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  /** Drops every entry whose value matches (e.g. all cached lookups of one revoked key). */
  deleteWhere(matches: (value: V, key: K) => boolean): void {
    for (const [key, entry] of this.#entries) {
      if (matches(entry.value, key)) this.#entries.delete(key);
    }
  }

  clear(): void {
    this.#entries.clear();
  }

  /** Entries held, expired ones not yet dropped included. */
  get size(): number {
    return this.#entries.size;
  }
}
