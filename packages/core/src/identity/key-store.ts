import type { Kysely } from 'kysely';
import type { Database, KeyKind } from '../store/database.js';
import { displayPrefix, hashSecret, isWellFormedKey, mintKey } from './keys.js';

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

interface CacheEntry {
  principal: KeyPrincipal;
  expiresAt: number;
}

const MAX_CACHE_ENTRIES = 10_000;

/**
 * API keys: minted, stored as SHA-256 hashes, authenticated by one indexed lookup, cached briefly.
 *
 * @see DESIGN.md "Performance habits"
 */
export class KeyStore {
  readonly #cache = new Map<string, CacheEntry>();
  readonly #touchedAt = new Map<string, number>();
  readonly #ttl: number;
  readonly #touchInterval: number;
  readonly #now: () => number;

  constructor(
    private readonly db: Kysely<Database>,
    options: KeyStoreOptions = {},
  ) {
    this.#ttl = options.cacheTtlMs ?? 2000;
    this.#touchInterval = options.touchIntervalMs ?? 60_000;
    this.#now = options.now ?? Date.now;
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

  /** The live principal of a presented key, or null when it is unknown or revoked. */
  async authenticate(key: string): Promise<KeyPrincipal | null> {
    if (!isWellFormedKey(key)) return null;
    const hash = hashSecret(key);
    const now = this.#now();
    const cached = this.#cache.get(hash);
    if (cached && cached.expiresAt > now) {
      this.#touch(cached.principal.keyId, now);
      return cached.principal;
    }
    const row = await this.db
      .selectFrom('api_keys')
      .select(['id', 'kind', 'tenant_id', 'app_id', 'connection_id', 'user_id'])
      .where('key_hash', '=', hash)
      .where('revoked_at', 'is', null)
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
    if (this.#cache.size >= MAX_CACHE_ENTRIES) this.#cache.clear();
    this.#cache.set(hash, { principal, expiresAt: now + this.#ttl });
    this.#touch(row.id, now);
    return principal;
  }

  /** Revokes a key; true when it was live. Takes effect here at once, elsewhere within the TTL. */
  async revoke(keyId: string, tenantId?: string): Promise<boolean> {
    let query = this.db
      .updateTable('api_keys')
      .set({ revoked_at: new Date() })
      .where('id', '=', keyId)
      .where('revoked_at', 'is', null);
    if (tenantId) query = query.where('tenant_id', '=', tenantId);
    const result = await query.executeTakeFirst();
    for (const [hash, entry] of this.#cache) {
      if (entry.principal.keyId === keyId) this.#cache.delete(hash);
    }
    return result.numUpdatedRows > 0n;
  }

  /** Records use at most once per interval per key, off the request's critical path. */
  #touch(keyId: string, now: number): void {
    const last = this.#touchedAt.get(keyId) ?? 0;
    if (now - last < this.#touchInterval) return;
    if (this.#touchedAt.size >= MAX_CACHE_ENTRIES) this.#touchedAt.clear();
    this.#touchedAt.set(keyId, now);
    this.db
      .updateTable('api_keys')
      .set({ last_used_at: new Date(now) })
      .where('id', '=', keyId)
      .execute()
      .catch(() => {
        // Bookkeeping only: a failed touch is retried on the next use after the interval.
        this.#touchedAt.delete(keyId);
      });
  }
}
