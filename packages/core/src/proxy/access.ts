import type { Kysely } from 'kysely';
import type { KeyPrincipal } from '../identity/key-store.js';
import { TtlCache } from '../internal/ttl-cache.js';
import { LAST_KNOWN_MS, readOrLastKnown } from '../store/availability.js';
import type { Database } from '../store/database.js';

/**
 * Which connection a key reaches a provider through, if any: an App Key through a binding of its
 * app to a connected connection of the provider; a Connection Key through its own connection when
 * it is for that provider and connected; a CLI key (the developer's personal key, used by
 * `service dev`) through any connected connection of its tenant for the provider. Answers are
 * kept for two seconds, as keys are (and, while the store cannot be reached, 4 s longer).
 *
 * @see docs/proxy.md "Who may call"
 */
export class ConnectionResolver {
  readonly #cache: TtlCache<string, string | null>;

  constructor(
    private readonly db: Kysely<Database>,
    ttlMs = 2000,
    now: () => number = Date.now,
  ) {
    this.#cache = new TtlCache({ ttlMs, maxEntries: 10_000, now, staleMs: LAST_KNOWN_MS });
  }

  async connectionFor(key: KeyPrincipal, provider: string): Promise<string | null> {
    const cacheKey = `${key.tenantId}|${key.keyId}|${provider}`;
    const cached = this.#cache.get(cacheKey);
    if (cached !== undefined) return cached;
    // While the store cannot be reached, the answer last read stands (see `LAST_KNOWN_MS`).
    return readOrLastKnown(
      async () => {
        const connectionId = await this.#lookup(key, provider);
        this.#cache.set(cacheKey, connectionId);
        return connectionId;
      },
      () => this.#cache.stale(cacheKey),
    );
  }

  /**
   * Forgets what was resolved for `tenantId`'s keys to `provider`, so a connection just made or
   * switched is seen by the next call rather than after the cache lifetime.
   */
  forget(tenantId: string, provider: string): void {
    this.#cache.deleteWhere((_, key) => key.startsWith(`${tenantId}|`) && key.endsWith(`|${provider}`));
  }

  async #lookup(key: KeyPrincipal, provider: string): Promise<string | null> {
    const live = this.db
      .selectFrom('connections')
      .select('connections.id')
      .where('connections.tenant_id', '=', key.tenantId)
      .where('connections.provider', '=', provider)
      .where('connections.status', '=', 'connected')
      // A host app's users' connections serve those users only, never a workspace key.
      .where('connections.end_user', 'is', null);
    if (key.kind === 'app' && key.appId) {
      const row = await live
        .innerJoin('app_connections', 'app_connections.connection_id', 'connections.id')
        .where('app_connections.app_id', '=', key.appId)
        .orderBy('app_connections.created_at')
        .executeTakeFirst();
      return row?.id ?? null;
    }
    if (key.kind === 'connection' && key.connectionId) {
      const row = await live.where('connections.id', '=', key.connectionId).executeTakeFirst();
      return row?.id ?? null;
    }
    if (key.kind === 'cli') {
      const row = await live.orderBy('connections.created_at').executeTakeFirst();
      return row?.id ?? null;
    }
    return null;
  }
}
