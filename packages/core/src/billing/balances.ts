import type { Kysely } from 'kysely';
import { TtlCache } from '../internal/ttl-cache.js';
import type { Database } from '../store/database.js';
import type { Store } from '../store/index.js';
import { balanceMicros, parseWalletNotice, WALLETS_CHANNEL } from './ledger.js';

export interface BalanceReaderOptions {
  /** How long a read balance is served from memory. Default 1000 ms. */
  ttlMs?: number;
  /**
   * Called before each read: a promise to wait for (postings under way on this instance land
   * first), or null when there is nothing to wait for (the read then takes no extra turn).
   */
  before?: (tenantId: string) => Promise<void> | null;
  now?: () => number;
}

const MAX_ENTRIES = 10_000;

/**
 * Wallet balances for the advisory balance endpoints, read through a short cache.
 *
 * Reading a balance is advisory (the metering proxy is the enforcer), so a balance may be served
 * from memory for up to `ttlMs`. Every ledger posting NOTIFYs the tenants whose wallet moved; a
 * reader that `follow`s the store forgets those at once, on every instance (without following,
 * within the TTL). Concurrent reads of one tenant share one query.
 */
export class BalanceReader {
  readonly #cache: TtlCache<string, number>;
  readonly #inflight = new Map<string, Promise<number>>();
  readonly #before: ((tenantId: string) => Promise<void> | null) | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    options: BalanceReaderOptions = {},
  ) {
    this.#cache = new TtlCache({ ttlMs: options.ttlMs ?? 1000, maxEntries: MAX_ENTRIES, now: options.now });
    this.#before = options.before;
  }

  /** The tenant's balance in micros (0 without a wallet). */
  async micros(tenantId: string): Promise<number> {
    const landing = this.#before?.(tenantId);
    if (landing) await landing;
    const cached = this.#cache.get(tenantId);
    if (cached !== undefined) return cached;
    let pending = this.#inflight.get(tenantId);
    if (!pending) {
      pending = balanceMicros(this.db, tenantId)
        .then((micros) => {
          if (this.#inflight.get(tenantId) === pending) this.#cache.set(tenantId, micros);
          return micros;
        })
        .finally(() => {
          if (this.#inflight.get(tenantId) === pending) this.#inflight.delete(tenantId);
        });
      this.#inflight.set(tenantId, pending);
    }
    return pending;
  }

  /**
   * Forgets balances as other instances post: LISTENs on the wallets channel. Resolves to the
   * function that stops listening.
   */
  async follow(store: Pick<Store, 'listen'>): Promise<() => Promise<void>> {
    return store.listen(WALLETS_CHANNEL, (payload) => {
      if (payload === null) {
        this.#cache.clear();
        return;
      }
      for (const { tenantId } of parseWalletNotice(payload)) this.invalidate(tenantId);
    });
  }

  /** Forgets a tenant's balance, so the next read asks the store. */
  invalidate(tenantId: string): void {
    this.#cache.delete(tenantId);
    // A read already under way may have started before the posting; its answer is not cached.
    this.#inflight.delete(tenantId);
  }
}
