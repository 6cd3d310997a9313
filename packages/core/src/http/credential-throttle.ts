import { TtlCache } from '../internal/ttl-cache.js';
import type { RateLimiter, RateLimitRule } from './rate-limit.js';

/** Failed credentials one client address may present per window, on every instance together. */
export const FAILED_CREDENTIALS_RULE: RateLimitRule = { limit: 30, windowMs: 60_000 };

const MAX_BLOCKED_ADDRESSES = 100_000;

/**
 * Throttles guessing: each failed credential (an unknown, revoked or malformed key, a token that
 * does not verify) is counted per client address in the shared rate-limit counts, so every
 * instance sees the same failures. Once an address is past the limit, the instance that learns it
 * refuses every credentialed request from that address until the window ends, before looking the
 * credential up: a correct guess is refused like a wrong one, so a blocked address learns nothing.
 *
 * Another instance learns of the block at the first failure it sees from that address; until
 * then it only counts. Requests without any credential are not counted (they cost no lookup).
 *
 * @see docs/decisions.md "Failed credentials"
 */
export class FailedCredentialThrottle {
  /** Addresses known to be over the limit, until their window ends. */
  readonly #blockedUntil: TtlCache<string, number>;
  readonly #now: () => number;

  constructor(
    private readonly limiter: RateLimiter,
    private readonly rule: RateLimitRule = FAILED_CREDENTIALS_RULE,
    now: () => number = Date.now,
  ) {
    this.#now = now;
    this.#blockedUntil = new TtlCache({ ttlMs: rule.windowMs, maxEntries: MAX_BLOCKED_ADDRESSES, now });
  }

  /** Seconds until `address` may present a credential again; null when it may now. */
  retryAfter(address: string): number | null {
    const until = this.#blockedUntil.get(address);
    return until === undefined ? null : Math.max(1, Math.ceil((until - this.#now()) / 1000));
  }

  /**
   * Counts a failed credential from `address`. Returns the seconds to wait when this failure is
   * past the limit (answer 429 instead of 401), else null. A counting fault (the store away) is
   * no reason to change the answer: it reads as null.
   */
  async failed(address: string): Promise<number | null> {
    let verdict: Awaited<ReturnType<RateLimiter['hit']>>;
    try {
      verdict = await this.limiter.hit(`failed-credential:${address}`, this.rule);
    } catch {
      return null;
    }
    if (verdict.allowed) return null;
    const wait = verdict.retryAfterSeconds;
    this.#blockedUntil.set(address, this.#now() + wait * 1000, wait * 1000);
    return wait;
  }
}
