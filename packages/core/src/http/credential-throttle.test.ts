/**
 * The failed-credential throttle over the store-backed limiter: counted across instances, an
 * address past the limit refused until its window ends.
 *
 * @see docs/decisions.md "Failed credentials"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import type { Store } from '../store/index.js';
import { createRateLimitCounter } from '../store/rate-limit-hits.js';
import { FailedCredentialThrottle } from './credential-throttle.js';
import { RateLimiter } from './rate-limit.js';

for (const kind of STORE_KINDS) {
  describe(`FailedCredentialThrottle (${kind})`, () => {
    let store: TestStore;
    let second: Store;
    beforeAll(async () => {
      store = await openTestStore(kind);
      second = kind === 'postgres' ? await openSecondHandle(store) : store;
    });
    afterAll(async () => {
      if (second !== store) await second?.close();
      await store?.dispose();
    });

    const rule = { limit: 5, windowMs: 60_000 };
    let n = 0;
    const address = () => `192.0.2.${++n}`;

    it('counts failures per address and blocks past the limit until the window ends', async () => {
      let now = 1_000_000 * 60_000 + 10_000;
      const throttle = new FailedCredentialThrottle(
        new RateLimiter(createRateLimitCounter(store.db), () => now),
        rule,
        () => now,
      );
      const ip = address();
      for (let i = 0; i < rule.limit; i++) expect(await throttle.failed(ip)).toBeNull();
      expect(throttle.retryAfter(ip)).toBeNull();
      expect(await throttle.failed(ip)).toBe(50);
      expect(throttle.retryAfter(ip)).toBe(50);
      // Another address is not affected.
      expect(throttle.retryAfter(address())).toBeNull();
      now += 50_000;
      expect(throttle.retryAfter(ip)).toBeNull();
    });

    it('adds up the failures every instance sees', async () => {
      const ip = address();
      const one = new FailedCredentialThrottle(new RateLimiter(createRateLimitCounter(store.db)), rule);
      const two = new FailedCredentialThrottle(new RateLimiter(createRateLimitCounter(second.db)), rule);
      for (let i = 0; i < 3; i++) expect(await one.failed(ip)).toBeNull();
      for (let i = 0; i < 2; i++) expect(await two.failed(ip)).toBeNull();
      // The sixth failure, on either instance, is past the limit of five.
      expect(await one.failed(ip)).not.toBeNull();
      expect(one.retryAfter(ip)).not.toBeNull();
      // The other instance learns at its next failure.
      expect(two.retryAfter(ip)).toBeNull();
      expect(await two.failed(ip)).not.toBeNull();
      expect(two.retryAfter(ip)).not.toBeNull();
    });

    it('leaves the answer alone when the count cannot be written', async () => {
      const broken = new FailedCredentialThrottle(
        new RateLimiter({ add: () => Promise.reject(new Error('store away')), sweep: async () => {} }),
        rule,
      );
      expect(await broken.failed(address())).toBeNull();
    });
  });
}
