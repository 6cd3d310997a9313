/**
 * Per-IP rate limits of the balance endpoints, counted in the store so that several server
 * instances sharing one database enforce one budget.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.js';
import {
  createTenantFixture,
  type RunningPlatform,
  startPlatform,
  type TenantFixture,
} from './support/platform.js';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

/** Fixed one-minute windows: start a burst only when the current window has room for it. */
async function awaitFreshWindow(neededMs = 15_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < neededMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

for (const kind of STORE_KINDS) {
  describe(`rate limits across two instances (${kind})`, () => {
    let store: TestStore;
    let second: Store | undefined;
    let a: RunningPlatform;
    let b: RunningPlatform;
    let tenant: TenantFixture;

    beforeAll(async () => {
      store = await openTestStore(kind);
      // On Postgres the second instance has its own connection pool, as a second process would.
      second = kind === 'postgres' ? await openSecondHandle(store) : undefined;
      // Behind one trusted proxy, so each test can speak for its own client IP.
      a = await startPlatform(store, { trustedProxies: 1 });
      b = await startPlatform(second ?? store, { trustedProxies: 1 });
      tenant = await createTenantFixture(a.platform, 1_000_000);
    });

    afterAll(async () => {
      await a?.close();
      await b?.close();
      await second?.close();
      await store?.dispose();
    });

    let nextIp = 1;
    const burst = async (path: string, count: number, key: string, ip: string) => {
      const statuses: number[] = [];
      for (let i = 0; i < count; i++) {
        const target = i % 2 === 0 ? a : b;
        const response = await fetch(`${target.url}${path}`, {
          headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': ip },
        });
        statuses.push(response.status);
        await response.arrayBuffer();
      }
      return statuses;
    };

    for (const [path, limit, body] of [
      ['/api/billing/balance', 60, { error: { message: 'Rate limit exceeded' } }],
      ['/api/v1/balance', 60, { error: { message: 'Rate limit exceeded' } }],
      ['/api/cli/balance', 30, { message: 'Rate limit exceeded' }],
    ] as const) {
      it(`${path}: request ${limit + 1} in a minute from one IP is 429 with the exact body`, async () => {
        await awaitFreshWindow();
        const ip = `203.0.113.${nextIp++}`;
        const statuses = await burst(path, limit, tenant.appKey, ip);
        expect(statuses.every((s) => s === 200)).toBe(true);
        // The next request goes to whichever instance did not take the last one.
        const target = limit % 2 === 0 ? a : b;
        const response = await fetch(`${target.url}${path}`, {
          headers: { authorization: `Bearer ${tenant.appKey}`, 'x-forwarded-for': ip },
        });
        expect(response.status).toBe(429);
        expect(await response.json()).toEqual(body);
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      });
    }

    it('counts unauthenticated requests too, so guessing keys is limited', async () => {
      await awaitFreshWindow();
      const statuses = await burst('/api/cli/balance', 31, 'guess', `203.0.113.${nextIp++}`);
      expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
      expect(statuses[30]).toBe(429);
    });

    it('keeps separate budgets for separate client IPs', async () => {
      await awaitFreshWindow();
      const first = `203.0.113.${nextIp++}`;
      const statuses = await burst('/api/cli/balance', 31, tenant.appKey, first);
      expect(statuses[30]).toBe(429);
      const other = await burst('/api/cli/balance', 1, tenant.appKey, `203.0.113.${nextIp++}`);
      expect(other).toEqual([200]);
    });

    it('ignores X-Forwarded-For without a trusted proxy, so spoofing it evades nothing', async () => {
      const direct = await startPlatform(second ?? store);
      try {
        await awaitFreshWindow();
        const statuses: number[] = [];
        for (let i = 0; i < 31; i++) {
          const response = await fetch(`${direct.url}/api/cli/balance`, {
            headers: { authorization: `Bearer ${tenant.appKey}`, 'x-forwarded-for': `198.51.100.${i}` },
          });
          statuses.push(response.status);
        }
        expect(statuses.slice(0, 30).every((s) => s === 200)).toBe(true);
        expect(statuses[30]).toBe(429);
      } finally {
        await direct.close();
      }
    });
  });
}
