/**
 * The store-backed rate limiter: exact at the limit across instances, batched below it.
 *
 * @see docs/decisions.md "Rate limits"
 */
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import type { Database } from '../store/database.js';
import type { Store } from '../store/index.js';
import { createRateLimitCounter } from '../store/rate-limit-hits.js';
import { RateLimiter } from './rate-limit.js';

const storedHits = async (db: Kysely<Database>, bucket: string) =>
  (
    await db
      .selectFrom('rate_limit_hits')
      .select((eb) => eb.fn.sum<number>('hits').as('hits'))
      .where('bucket', '=', bucket)
      .executeTakeFirst()
  )?.hits ?? 0;

for (const kind of STORE_KINDS) {
  describe(`RateLimiter (${kind})`, () => {
    let store: TestStore;
    let second: Store | undefined;
    beforeAll(async () => {
      store = await openTestStore(kind);
      second = kind === 'postgres' ? await openSecondHandle(store) : undefined;
    });
    afterAll(async () => {
      await second?.close();
      await store?.dispose();
    });

    let n = 0;
    const bucket = () => `test-${++n}`;
    const minute = { limit: 10, windowMs: 60_000 };

    it('admits exactly the limit of a concurrent burst on one instance', async () => {
      const limiter = new RateLimiter(createRateLimitCounter(store.db));
      const b = bucket();
      const verdicts = await Promise.all(Array.from({ length: 100 }, () => limiter.hit(b, minute)));
      expect(verdicts.filter((v) => v.allowed)).toHaveLength(10);
      expect(verdicts.filter((v) => !v.allowed).every((v) => v.retryAfterSeconds >= 1)).toBe(true);
    });

    it('admits exactly the limit of a burst spread over two instances sharing the store', async () => {
      const a = new RateLimiter(createRateLimitCounter(store.db));
      const b = new RateLimiter(createRateLimitCounter((second ?? store).db));
      const name = bucket();
      const rule = { limit: 20, windowMs: 60_000 };
      const verdicts = await Promise.all(
        Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? a : b).hit(name, rule)),
      );
      expect(verdicts.filter((v) => v.allowed)).toHaveLength(20);
    });

    it('admits exactly the limit of sequential hits alternating between two instances', async () => {
      const a = new RateLimiter(createRateLimitCounter(store.db));
      const b = new RateLimiter(createRateLimitCounter((second ?? store).db));
      const name = bucket();
      const allowed: boolean[] = [];
      for (let i = 0; i < 15; i++) allowed.push((await (i % 2 === 0 ? a : b).hit(name, minute)).allowed);
      expect(allowed).toEqual([...Array(10).fill(true), ...Array(5).fill(false)]);
    });

    it('answers hits far below the limit at once and writes them to the store moments later', async () => {
      const limiter = new RateLimiter(createRateLimitCounter(store.db));
      const name = bucket();
      const rule = { limit: 1000, windowMs: 60_000 };
      // The first hit of a window waits for the store, which gives this instance its view.
      expect((await limiter.hit(name, rule)).allowed).toBe(true);
      expect(await storedHits(store.db, name)).toBe(1);
      for (let i = 0; i < 5; i++) expect((await limiter.hit(name, rule)).allowed).toBe(true);
      expect(await storedHits(store.db, name)).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(await storedHits(store.db, name)).toBe(6);
    });

    it('starts counting afresh in the next window', async () => {
      let now = Date.UTC(2026, 0, 1, 12, 0, 0);
      const limiter = new RateLimiter(createRateLimitCounter(store.db), { now: () => now });
      const name = bucket();
      const rule = { limit: 2, windowMs: 60_000 };
      const first = await Promise.all([
        limiter.hit(name, rule),
        limiter.hit(name, rule),
        limiter.hit(name, rule),
      ]);
      expect(first.map((v) => v.allowed)).toEqual([true, true, false]);
      expect(first[2]!.retryAfterSeconds).toBe(60);
      now += 60_000;
      expect((await limiter.hit(name, rule)).allowed).toBe(true);
    });

    it('fails a waiting hit when the store cannot count it', async () => {
      const broken = await openTestStore('pglite');
      const limiter = new RateLimiter(createRateLimitCounter(broken.db));
      await broken.dispose();
      await expect(limiter.hit(bucket(), minute)).rejects.toThrow();
    });
  });
}
