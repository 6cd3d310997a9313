import type { ExpressionBuilder, Kysely } from 'kysely';
import { TtlCache } from '../internal/ttl-cache.js';
import { LAST_KNOWN_MS, readOrLastKnown } from '../store/availability.js';
import type { Database, KeyKind } from '../store/database.js';
import type { NotificationHandler } from '../store/listener.js';
import { type Notice, sendNotices } from '../store/notices.js';
import { displayPrefix, hashSecret, isWellFormedKey, mintKey } from './keys.js';

/** Keys that still work at `now`: not revoked, and not past the overlap of a rotation. */
export function liveKeyAt(now: number) {
  return (eb: ExpressionBuilder<Database, 'api_keys'>) =>
    eb.and([
      eb('revoked_at', 'is', null),
      eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date(now))]),
    ]);
}

/** What a presented API key stands for. */
export interface KeyPrincipal {
  keyId: string;
  kind: KeyKind;
  tenantId: string;
  appId: string | null;
  connectionId: string | null;
  userId: string | null;
}

export interface IssueKeyInput {
  tenantId: string;
  kind: KeyKind;
  appId?: string | null;
  connectionId?: string | null;
  userId?: string | null;
  name?: string | null;
}

export interface IssuedKey {
  id: string;
  /** The key itself: returned once, never stored. */
  key: string;
  prefix: string;
}

export interface KeyStoreOptions {
  /**
   * How long a looked-up key is trusted without asking the store again. Bounds how long a key
   * revoked on another instance keeps working here. Default 2000 ms.
   */
  cacheTtlMs?: number;
  /** Minimum interval between `last_used_at` writes for one key. Default 60 s. */
  touchIntervalMs?: number;
  now?: () => number;
}

const MAX_CACHE_ENTRIES = 10_000;

/**
 * Carries the id of every key revoked or rotated, so each instance drops it from its cache; a
 * rotation's notice adds when its overlap ends (`<id> <epoch ms>`).
 */
export const KEYS_CHANNEL = 'service_api_keys';

/**
 * The notices that make every instance forget these keys once the transaction commits, and, with
 * `overlapEnds`, forget them again when a rotation's overlap ends.
 */
export function keyNotices(keyIds: readonly string[], overlapEnds?: Date): Notice[] {
  const until = overlapEnds ? ` ${overlapEnds.getTime()}` : '';
  return keyIds.map((id) => [KEYS_CHANNEL, `${id}${until}`]);
}

/**
 * API keys: minted, stored as SHA-256 hashes, authenticated by one indexed lookup, cached briefly.
 */
export class KeyStore {
  /** Principals by key hash. */
  readonly #cache: TtlCache<string, KeyPrincipal>;
  /** Keys whose use was recorded within the touch interval. */
  readonly #recentlyTouched: TtlCache<string, true>;
  readonly #now: () => number;
  readonly #cacheTtlMs: number;
  /** Counts forgettings, so a lookup that overlapped one does not cache what it read before it. */
  #forgotten = 0;
  /** Told of every forgetting: the keys, or null for all (notifications may have been missed). */
  readonly #forgetListeners = new Set<(keyIds: readonly string[] | null) => void>();
  /** Keys in a rotation's overlap, with the timer that forgets each when the overlap ends. */
  readonly #overlapEnds = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(
    private readonly db: Kysely<Database>,
    options: KeyStoreOptions = {},
  ) {
    const now = options.now ?? Date.now;
    this.#now = now;
    this.#cacheTtlMs = options.cacheTtlMs ?? 2000;
    this.#cache = new TtlCache({
      ttlMs: this.#cacheTtlMs,
      maxEntries: MAX_CACHE_ENTRIES,
      now,
      staleMs: LAST_KNOWN_MS,
    });
    this.#recentlyTouched = new TtlCache({
      ttlMs: options.touchIntervalMs ?? 60_000,
      maxEntries: MAX_CACHE_ENTRIES,
      now,
    });
  }

  async issue(input: IssueKeyInput): Promise<IssuedKey> {
    const key = mintKey();
    const row = await this.db
      .insertInto('api_keys')
      .values({
        tenant_id: input.tenantId,
        kind: input.kind,
        app_id: input.appId ?? null,
        connection_id: input.connectionId ?? null,
        user_id: input.userId ?? null,
        key_hash: hashSecret(key),
        prefix: displayPrefix(key),
        name: input.name ?? null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { id: row.id, key, prefix: displayPrefix(key) };
  }

  /** The live principal of a presented key, or null when it is unknown, revoked or past its overlap. */
  async authenticate(key: string): Promise<KeyPrincipal | null> {
    if (!isWellFormedKey(key)) return null;
    const hash = hashSecret(key);
    const cached = this.#cache.get(hash);
    if (cached) {
      this.#touch(cached.keyId);
      return cached;
    }
    // While the store cannot be reached, the principal last read stands (see `LAST_KNOWN_MS`): a
    // revocation heard before has dropped it; one made meanwhile is read once the store is back.
    return readOrLastKnown(
      () => this.#lookup(hash),
      () => this.#cache.stale(hash),
    );
  }

  async #lookup(hash: string): Promise<KeyPrincipal | null> {
    const now = this.#now();
    const forgotten = this.#forgotten;
    const row = await this.db
      .selectFrom('api_keys')
      .select(['id', 'kind', 'tenant_id', 'app_id', 'connection_id', 'user_id', 'expires_at'])
      .where('key_hash', '=', hash)
      .where(liveKeyAt(now))
      .executeTakeFirst();
    if (!row) {
      this.#cache.delete(hash);
      return null;
    }
    const principal: KeyPrincipal = {
      keyId: row.id,
      kind: row.kind,
      tenantId: row.tenant_id,
      appId: row.app_id,
      connectionId: row.connection_id,
      userId: row.user_id,
    };
    // A rotated key is never served from the cache past the end of its overlap, and what holds it
    // here (an event stream) is checked again then, though this instance missed the rotation.
    if (row.expires_at) this.forgetAt(row.id, row.expires_at);
    const ttlMs = row.expires_at
      ? Math.min(this.#cacheTtlMs, row.expires_at.getTime() - now)
      : this.#cacheTtlMs;
    // A revocation heard while the lookup ran may postdate what it read: answer, but do not cache.
    // A key in a rotation's overlap is not kept past it for an outage either.
    if (forgotten === this.#forgotten)
      this.#cache.set(hash, principal, ttlMs, row.expires_at ? 0 : undefined);
    this.#touch(row.id);
    return principal;
  }

  /**
   * Revokes a key; true when it was live. Takes effect here at once and, through the store's
   * notifications, on every instance that follows them (see `follow`).
   */
  async revoke(keyId: string, tenantId?: string): Promise<boolean> {
    const revoked = await this.db.transaction().execute(async (trx) => {
      let query = trx
        .updateTable('api_keys')
        .set({ revoked_at: new Date() })
        .where('id', '=', keyId)
        .where('revoked_at', 'is', null);
      if (tenantId) query = query.where('tenant_id', '=', tenantId);
      const result = await query.executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      await sendNotices(trx, keyNotices([keyId]));
      return true;
    });
    this.forget([keyId]);
    return revoked;
  }

  /** Drops keys from this instance's cache, so their next use asks the store. */
  forget(keyIds: readonly string[]): void {
    if (keyIds.length === 0) return;
    this.#forgotten++;
    const ids = new Set(keyIds);
    this.#cache.deleteWhere((principal) => ids.has(principal.keyId));
    for (const listener of this.#forgetListeners) listener(keyIds);
  }

  /**
   * Forgets a key once more when its rotation overlap ends at `at`, so its listeners (an event
   * stream opened with it) check it then rather than at their next heartbeat. Once per key: a
   * key's overlap is set once (a key in its overlap is not rotated again).
   */
  forgetAt(keyId: string, at: Date): void {
    if (this.#overlapEnds.has(keyId)) return;
    const wait = () => {
      const delayMs = at.getTime() - this.#now();
      if (delayMs > 0) {
        // Waited again when a timer fires early (the event loop's clock lags a busy tick).
        // At most what a timer holds (about 24 days): a longer wait is waited in turns.
        const timer = setTimeout(wait, Math.min(delayMs, 2 ** 31 - 1));
        timer.unref?.();
        this.#overlapEnds.set(keyId, timer);
        return;
      }
      this.#overlapEnds.delete(keyId);
      this.forget([keyId]);
    };
    wait();
  }

  /**
   * Tells `listener` of the keys this instance forgets (revoked or rotated here or on another
   * instance), or null when it forgets them all: what holds a key past its request (an event
   * stream) checks it again. Returns the function that stops telling.
   */
  onForget(listener: (keyIds: readonly string[] | null) => void): () => void {
    this.#forgetListeners.add(listener);
    return () => this.#forgetListeners.delete(listener);
  }

  /** Whether a key still works: not revoked, and not past the overlap of a rotation. */
  async isLive(keyId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('api_keys')
      .select('id')
      .where('id', '=', keyId)
      .where(liveKeyAt(this.#now()))
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Forgets keys as any instance revokes or rotates them: LISTENs on the keys channel. Without
   * it, another instance's revocation applies here once the cache entry expires. Resolves to the
   * function that stops listening.
   */
  follow(store: { listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>> }) {
    return store.listen(KEYS_CHANNEL, (payload) => {
      // Null: notifications may have been missed while the listener was away.
      if (payload === null) {
        this.#forgotten++;
        this.#cache.clear();
        for (const listener of this.#forgetListeners) listener(null);
        return;
      }
      const [keyId = '', overlapEnds] = payload.split(' ');
      this.forget([keyId]);
      if (overlapEnds !== undefined) this.forgetAt(keyId, new Date(Number(overlapEnds)));
    });
  }

  /** Records use at most once per interval per key, off the request's critical path. */
  #touch(keyId: string): void {
    if (this.#recentlyTouched.has(keyId)) return;
    this.#recentlyTouched.set(keyId, true);
    this.db
      .updateTable('api_keys')
      .set({ last_used_at: new Date(this.#now()) })
      .where('id', '=', keyId)
      .execute()
      .catch(() => {
        // Bookkeeping only: a failed touch is retried on the next use after the interval.
        this.#recentlyTouched.delete(keyId);
      });
  }
}
