/**
 * Instance heartbeats in the store: a dead instance's holds are let go within its ttl, a live
 * one's never; an instance learns when it was counted dead; and a call whose hold was let go is
 * still billed exactly once.
 *
 * @see docs/billing.md "Crash safety"
 */
import { randomUUID } from 'node:crypto';
import { type KyselyPlugin, type QueryId, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { post } from '../src/billing/ledger.js';
import { createMeteringEngine } from '../src/billing/metering.js';
import { startInstanceHeartbeat } from '../src/store/instances.js';
import { openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const kind of STORE_KINDS) {
  describe(`instance heartbeat (${kind})`, () => {
    let store: TestStore;
    afterEach(async () => store?.dispose());

    const tenant = async (credit: number) => {
      const { id } = await store.db
        .insertInto('tenants')
        .values({ name: 't' })
        .returning('id')
        .executeTakeFirstOrThrow();
      await post(store.db, { tenantId: id, amountMicros: credit, kind: 'grant', idempotencyKey: `g-${id}` });
      return id;
    };
    const holdOf = async (instanceId: string, tenantId: string) => {
      const id = randomUUID();
      await store.db
        .insertInto('holds')
        .values({
          id,
          tenant_id: tenantId,
          app_id: null,
          amount_micros: 1000,
          worst_micros: null,
          instance_id: instanceId,
          expires_at: new Date(Date.now() + 15 * 60_000),
        })
        .execute();
      return id;
    };
    const holdIds = async () => (await store.db.selectFrom('holds').select('id').execute()).map((h) => h.id);

    it("lets go of a dead instance's holds within its ttl, never of a live one's", async () => {
      store = await openTestStore(kind);
      const tenantId = await tenant(10_000);
      const survivor = await startInstanceHeartbeat(store.db, { beatMs: 50, ttlMs: 300 });
      const live = await startInstanceHeartbeat(store.db, { beatMs: 50, ttlMs: 300 });
      // A dead instance: its row stopped being renewed (a SIGKILL leaves it like this).
      const deadId = randomUUID();
      await store.db
        .insertInto('instances')
        .values({ id: deadId, alive_until: sql<Date>`now() + interval '200 milliseconds'` })
        .execute();
      const liveHold = await holdOf(live.id, tenantId);
      const deadHold = await holdOf(deadId, tenantId);
      // Nothing is reaped before the survivor has itself beaten for a full ttl.
      expect(await holdIds()).toEqual(expect.arrayContaining([liveHold, deadHold]));
      const deadline = Date.now() + 3000;
      while ((await holdIds()).includes(deadHold) && Date.now() < deadline) await sleep(25);
      expect(await holdIds()).toEqual([liveHold]);
      // The live instance keeps its hold for as long as it beats.
      await sleep(900);
      expect(await holdIds()).toEqual([liveHold]);
      await live.stop();
      await survivor.stop();
    });

    it('reports a lapse when its own row ran out, and is not fresh while beats do not land', async () => {
      store = await openTestStore(kind);
      let lapses = 0;
      const instance = await startInstanceHeartbeat(store.db, {
        beatMs: 60_000,
        ttlMs: 120_000,
        onLapsed: () => lapses++,
      });
      expect(instance.fresh()).toBe(true);
      await instance.beat();
      expect(lapses).toBe(0);
      expect(instance.lapses).toBe(0);
      // Counted dead meanwhile (a stall, an outage): the next beat says so, and revives the row.
      await store.db
        .updateTable('instances')
        .set({ alive_until: new Date(0) })
        .execute();
      await instance.beat();
      expect(lapses).toBe(1);
      expect(instance.lapses).toBe(1);
      const row = await store.db.selectFrom('instances').select('alive_until').executeTakeFirstOrThrow();
      expect(row.alive_until.getTime()).toBeGreaterThan(Date.now());
      await instance.stop();
      // Stopping removes the row: the others may take over from then on, which counts as a lapse.
      expect(instance.lapses).toBe(2);
      expect(await store.db.selectFrom('instances').selectAll().execute()).toEqual([]);
      const quick = await startInstanceHeartbeat(store.db, { beatMs: 50, ttlMs: 120 });
      await store.dispose();
      // The store is gone: beats fail, and within ttl - beat the instance stops being fresh.
      await sleep(150);
      expect(quick.fresh()).toBe(false);
      await quick.stop();
      store = await openTestStore(kind);
    });

    it('judges others only after its beats land in time again, after a stall or a lapse', async () => {
      store = await openTestStore(kind);
      // Holds up the answer to the next beat (its renewal) once armed: a stall in the database or
      // the network, seen from this instance.
      let stallMs = 0;
      let landed: () => void = () => {};
      const renewals = new Set<QueryId>();
      const stalling: KyselyPlugin = {
        transformQuery: (args) => {
          if (args.node.kind === 'UpdateQueryNode') renewals.add(args.queryId);
          return args.node;
        },
        transformResult: async (args) => {
          if (renewals.delete(args.queryId) && stallMs > 0) {
            await sleep(stallMs);
            stallMs = 0;
            landed();
          }
          return args.result;
        },
      };
      const ttlMs = 1000;
      // Waits for the instance to become a judge again, and says how long after `since` it did.
      // Polled, not slept: on a loaded machine a late timer is a gap between beats, which rightly
      // restarts the count, so only "never before ttl, and in the end" is a fair assertion.
      const judgeAfter = async (since: number) => {
        const deadline = since + 15_000;
        while (!instance.mayJudgeOthers() && Date.now() < deadline) await sleep(10);
        expect(instance.mayJudgeOthers()).toBe(true);
        return Date.now() - since;
      };
      const startedAt = Date.now();
      const instance = await startInstanceHeartbeat(store.db.withPlugin(stalling), { beatMs: 250, ttlMs });
      const landing = () =>
        new Promise<void>((resolve) => {
          landed = resolve;
        });
      expect(instance.mayJudgeOthers()).toBe(false);
      expect(await judgeAfter(startedAt)).toBeGreaterThanOrEqual(ttlMs);
      // A beat sent just before a stall lands after it, with no gap between sends: the stall
      // still restarts the count.
      const afterStall = landing();
      stallMs = 700;
      await afterStall;
      const stallEnded = Date.now();
      await sleep(20);
      expect(instance.mayJudgeOthers()).toBe(false);
      // The landing is stamped a moment after the stall's end is seen here: a few ms of slack.
      expect(await judgeAfter(stallEnded)).toBeGreaterThanOrEqual(ttlMs - 50);
      // A beat that finds its own row lapsed (counted dead meanwhile) restarts it too.
      const lapsesBefore = instance.lapses;
      await store.db
        .updateTable('instances')
        .set({ alive_until: new Date(0) })
        .where('id', '=', instance.id)
        .execute();
      while (instance.lapses === lapsesBefore) await sleep(10);
      expect(instance.mayJudgeOthers()).toBe(false);
      await instance.stop();
    });

    it('bills a call exactly once when it settles after its hold was let go', async () => {
      store = await openTestStore(kind);
      const tenantId = await tenant(10_000);
      const instance = await startInstanceHeartbeat(store.db, { beatMs: 50, ttlMs: 300 });
      const metering = createMeteringEngine(store.db, { instance, leaseShare: 0, settleDelayMs: 0 });
      const admitted = await metering.admit({ tenantId, appId: null, holdMicros: 2000 });
      if (!admitted.ok) throw new Error('not admitted');
      // Reaped as a dead instance's would be.
      await store.db.deleteFrom('holds').execute();
      const settlement = {
        usageId: admitted.usageId,
        tenantId,
        appId: null,
        connectionId: null,
        keyId: null,
        provider: 'llm',
        model: null,
        quantities: { call: 1 },
        costMicros: 1500,
        estimated: false,
        upstreamStatus: 200,
        requestId: null,
        holdMicros: admitted.holdMicros,
        leaseId: admitted.leaseId,
      };
      await metering.settle(settlement);
      await metering.settle({ ...settlement, retried: true });
      const usage = await store.db.selectFrom('usage_events').select('cost_micros').execute();
      expect(usage).toEqual([{ cost_micros: 1500 }]);
      const wallet = await store.db
        .selectFrom('wallets')
        .select('balance_micros')
        .where('tenant_id', '=', tenantId)
        .executeTakeFirstOrThrow();
      expect(wallet.balance_micros).toBe(8500);
      await metering.close();
      await instance.stop();
    });
  });
}
