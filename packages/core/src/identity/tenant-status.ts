import type { Kysely, Transaction } from 'kysely';
import { TtlCache } from '../internal/ttl-cache.js';
import { LAST_KNOWN_MS, readOrLastKnown } from '../store/availability.js';
import type { Database, TenantStatus } from '../store/database.js';
import type { NotificationHandler } from '../store/listener.js';
import { sendNotices } from '../store/notices.js';

/** Carries the id of every tenant suspended or resumed, so each instance forgets its status. */
export const TENANT_STATUS_CHANNEL = 'service_tenant_status';

export interface TenantStatusesOptions {
  /**
   * How long a tenant's status is trusted without asking the store again. Bounds how long a
   * suspension made elsewhere goes unseen here while notices are not received. Default 2000 ms.
   */
  cacheTtlMs?: number;
  now?: () => number;
}

const MAX_CACHE_ENTRIES = 10_000;

/**
 * Whether a tenant is suspended, read on every metered call and so cached briefly; a suspension
 * or resumption on any instance reaches the cache by notice (the key store's pattern).
 */
export class TenantStatuses {
  readonly #cache: TtlCache<string, TenantStatus>;
  /** Counts forgettings, so a read that overlapped one does not cache what it read before it. */
  #forgotten = 0;

  constructor(
    private readonly db: Kysely<Database>,
    options: TenantStatusesOptions = {},
  ) {
    this.#cache = new TtlCache({
      ttlMs: options.cacheTtlMs ?? 2000,
      maxEntries: MAX_CACHE_ENTRIES,
      staleMs: LAST_KNOWN_MS,
      ...(options.now ? { now: options.now } : {}),
    });
  }

  /**
   * True when the tenant is suspended; an unknown tenant is not. While the store cannot be
   * reached, the status last read (within `LAST_KNOWN_MS` past its lifetime) stands: a suspension
   * heard before is in it; one made meanwhile is read once the store is back.
   */
  async isSuspended(tenantId: string): Promise<boolean> {
    const cached = this.#cache.get(tenantId);
    if (cached) return cached === 'suspended';
    const forgotten = this.#forgotten;
    const status = await readOrLastKnown(
      async () => {
        const row = await this.db
          .selectFrom('tenants')
          .select('status')
          .where('id', '=', tenantId)
          .executeTakeFirst();
        const read = row?.status ?? 'active';
        if (forgotten === this.#forgotten) this.#cache.set(tenantId, read);
        return read;
      },
      () => this.#cache.stale(tenantId),
    );
    return status === 'suspended';
  }

  /** Drops a tenant's status from this instance's cache. */
  forget(tenantId: string): void {
    this.#forgotten++;
    this.#cache.delete(tenantId);
  }

  /**
   * Forgets statuses as any instance changes them: LISTENs on the tenant status channel. Resolves
   * to the function that stops listening.
   */
  follow(store: { listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>> }) {
    return store.listen(TENANT_STATUS_CHANNEL, (payload) => {
      // Null: notices may have been missed while the listener was away.
      if (payload === null) {
        this.#forgotten++;
        this.#cache.clear();
      } else this.forget(payload);
    });
  }
}

/**
 * Moves a tenant to `status` inside the caller's transaction and tells every instance on commit.
 * Resolves to false when the tenant was already there (nothing changed, nothing sent).
 */
export async function setTenantStatus(
  trx: Transaction<Database>,
  tenantId: string,
  status: TenantStatus,
): Promise<boolean> {
  const result = await trx
    .updateTable('tenants')
    .set({ status })
    .where('id', '=', tenantId)
    .where('status', '<>', status)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return false;
  await sendNotices(trx, [[TENANT_STATUS_CHANNEL, tenantId]]);
  return true;
}
