/**
 * Admission as the API contract puts it: 402 only for a call made past a zero balance. Over real HTTP
 * against the fake upstream: token-metered calls hold what they are expected to cost (the model's
 * running average, bounded by the request's max_tokens), not a flat estimate, so concurrent cheap
 * calls are not refused while the credit covers them; and concurrent expensive calls cannot
 * overdraw by more than one call's worst case.
 *
 * @see docs/billing.md "A metered call"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from './support/fake-upstream.js';
import { createMeteredTenant, type MeteredWorld, startMeteredWorld } from './support/metered.js';
import type { RunningPlatform } from './support/platform.js';
import { STORE_KINDS, type TestStore } from './support/stores.js';

for (const kind of STORE_KINDS) {
  describe(`admission (${kind})`, () => {
    let world: MeteredWorld;
    let store: TestStore;
    let upstream: FakeUpstream;
    let server: RunningPlatform;

    beforeAll(async () => {
      world = await startMeteredWorld(kind);
      ({ store, upstream, server } = world);
    });
    afterAll(async () => world?.close());

    /** One call of a model by a tenant of its own, so the model's average cost is known here. */
    const warm = async (model: string) => {
      const other = await createMeteredTenant(server.platform, 1_000_000);
      expect(await complete(other.appKey, { model })).toBe(200);
      await server.platform.context.metering.settled();
    };
    const complete = async (key: string, body: object = {}) => {
      const response = await fetch(`${server.url}/proxy/llm/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo-small', messages: [{ role: 'user', content: 'hi' }], ...body }),
      });
      await response.arrayBuffer();
      return response.status;
    };
    /**
     * `total` calls made by `concurrency` callers at once: the statuses in order of answer, and
     * how many calls that began after the first 402 was answered were still admitted.
     */
    const load = async (key: string, total: number, concurrency: number, body: object = {}) => {
      const statuses: number[] = [];
      let started = 0;
      let refusedYet = false;
      let admittedAfterRefusal = 0;
      const worker = async () => {
        while (started < total) {
          started++;
          const afterRefusal = refusedYet;
          const status = await complete(key, body);
          statuses.push(status);
          if (status === 402) refusedYet = true;
          if (status === 200 && afterRefusal) admittedAfterRefusal++;
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      return { statuses, admittedAfterRefusal };
    };
    const balanceOf = async (tenantId: string) => {
      await server.platform.context.metering.settled();
      const wallet = await store.db
        .selectFrom('wallets')
        .select('balance_micros')
        .where('tenant_id', '=', tenantId)
        .executeTakeFirstOrThrow();
      return wallet.balance_micros;
    };

    it('admits cheap concurrent calls while the credit covers their expected cost', async () => {
      // 300 x 0.5 + 400 x 1.5 = 750 micros, x 1.2 margin = 900 (USD 0.0009); USD 0.05 of credit.
      upstream.usage = { prompt_tokens: 300, completion_tokens: 400 };
      const start = 50_000;
      // The provider's estimate (USD 0.005) is held until one call of the model has settled.
      await warm('demo-small');
      const tenant = await createMeteredTenant(server.platform, start);
      try {
        const { statuses, admittedAfterRefusal } = await load(tenant.appKey, 100, 10);
        expect(statuses.filter((s) => s !== 200 && s !== 402)).toEqual([]);
        const answered = statuses.filter((s) => s === 200).length;
        // 55 calls fit in the credit, the 56th is admitted on what is left: a flat USD 0.01 hold
        // per call in flight refused 89 of these 100 calls with 80 % of the credit left.
        expect(answered).toBe(56);
        // No 402 before the credit was spent: no call begun after a refusal was admitted.
        expect(admittedAfterRefusal).toBe(0);
        const balance = await balanceOf(tenant.tenantId);
        expect(balance).toBe(start - answered * 900);
        expect(balance).toBeGreaterThan(-900);
      } finally {
        upstream.usage = { prompt_tokens: 10, completion_tokens: 20 };
      }
    });

    it("bounds the overdraft of concurrent expensive calls to one call's worst case", async () => {
      // 50 000 output tokens x 1.5 x 1.2 = 90 000 micros (USD 0.09) a call; USD 0.09 of credit.
      upstream.usage = { prompt_tokens: 0, completion_tokens: 50_000 };
      const start = 90_000;
      const tenant = await createMeteredTenant(server.platform, start);
      try {
        const { statuses } = await load(tenant.appKey, 10, 10, { max_tokens: 50_000 });
        expect(statuses.filter((s) => s !== 200 && s !== 402)).toEqual([]);
        // A flat hold let all ten through (USD -0.81). The first call's worst case is not covered,
        // so it is closing: the others wait for it, then find the credit spent.
        expect(statuses.filter((s) => s === 200)).toHaveLength(1);
        const balance = await balanceOf(tenant.tenantId);
        expect(balance).toBe(0);
      } finally {
        upstream.usage = { prompt_tokens: 10, completion_tokens: 20 };
      }
    });

    it('lets calls that fit run beside a closing call, and bills each once', async () => {
      await warm('demo-small');
      // USD 1 of credit; one streamed call bounded far past it (max_tokens 10^9) is closing.
      const tenant = await createMeteredTenant(server.platform, 1_000_000);
      let open!: () => void;
      upstream.gate = new Promise((resolve) => {
        open = resolve;
      });
      try {
        const closing = complete(tenant.appKey, { stream: true, max_tokens: 1_000_000_000 });
        await new Promise((resolve) => setTimeout(resolve, 200));
        // Ordinary calls fit beside it: answered while it is still streaming, not after it.
        const started = Date.now();
        const beside = await Promise.all(Array.from({ length: 5 }, () => complete(tenant.appKey)));
        expect(beside).toEqual([200, 200, 200, 200, 200]);
        expect(Date.now() - started).toBeLessThan(5000);
        // A second call bounded past the credit would close too: it waits for the first.
        let secondDone = false;
        const second = complete(tenant.appKey, { max_tokens: 1_000_000_000 }).then((status) => {
          secondDone = true;
          return status;
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(secondDone).toBe(false);
        open();
        expect(await closing).toBe(200);
        expect(await second).toBe(200);
      } finally {
        open();
        upstream.gate = null;
      }
      await server.platform.context.metering.settled();
      const usage = await store.db
        .selectFrom('usage_events')
        .select('cost_micros')
        .where('tenant_id', '=', tenant.tenantId)
        .execute();
      expect(usage).toHaveLength(7);
      expect(await balanceOf(tenant.tenantId)).toBe(
        1_000_000 - usage.reduce((sum, row) => sum + Number(row.cost_micros), 0),
      );
    });

    it('holds the worst case from max_tokens and n, and the running average without a bound', async () => {
      upstream.usage = { prompt_tokens: 300, completion_tokens: 400 };
      await warm('demo-other');
      const tenant = await createMeteredTenant(server.platform, 10_000_000);
      const release = (() => {
        let open!: () => void;
        upstream.gate = new Promise<void>((resolve) => {
          open = resolve;
        });
        return open;
      })();
      try {
        const streaming = complete(tenant.appKey, {
          model: 'demo-other',
          stream: true,
          max_tokens: 1000,
          n: 2,
        });
        let hold: { amount_micros: number; worst_micros: number | null } | undefined;
        for (let i = 0; i < 100 && !hold; i++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          hold = await store.db
            .selectFrom('holds')
            .select(['amount_micros', 'worst_micros'])
            .where('app_id', '=', tenant.appId)
            .executeTakeFirst();
        }
        // The model's average (900) is held; the worst case is the input estimate plus
        // 2 x 1000 output tokens at 1.5 micros, x 1.2.
        expect(hold?.amount_micros).toBe(900);
        expect(hold?.worst_micros).toBeGreaterThanOrEqual(3600);
        expect(hold?.worst_micros).toBeLessThan(3700);
        release();
        expect(await streaming).toBe(200);
      } finally {
        upstream.gate = null;
        upstream.usage = { prompt_tokens: 10, completion_tokens: 20 };
      }
    });
  });
}
