/**
 * `POST /apps/:id/rebase-pin` and `drifted` over real HTTP (a real Express server on loopback), on
 * every store kind. A remix drifts when the host's seed of its component changes: remixes are
 * seeded through a service composed with the first seed, then rebased through a second service
 * on the same store whose seed of that component changed. Replays are scripted (`apps.replay`),
 * and the default replayer is driven by a scripted AI SDK model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contentHash } from '../../src/apps/index.js';
import { AppStore } from '../../src/wire/apps/app-store.js';
import type { Service } from '../../src/wire/create-service.js';
import type { AppReplayer, AppReplayStep } from '../../src/wire/options.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { jsonOf, wireErrorOf } from './support/answers.js';
import { scriptedModel } from './support/models.js';
import { connect, type Transport } from './support/transports.js';
import { type Caller, callerFor, testService } from './support/wire.js';

const tools = [
  {
    name: 'list_orders',
    description: 'Lists orders',
    input: z.object({}),
    risk: 'read' as const,
    execute: () => ({ count: 2, items: [] }),
  },
];

const ordersDoc = (title: string, label = 'Open') => ({
  version: 1 as const,
  title,
  queries: { orders: { tool: 'list_orders', input: {} } },
  state: {},
  root: {
    component: 'Stack',
    props: { gap: 8 },
    children: [{ component: 'Stat', props: { label, value: { $query: 'orders', path: 'count' } } }],
  },
});
type Doc = ReturnType<typeof ordersDoc>;

/** The seed a remix starts from, and the host's changed seed of the same component. */
const FIRST = ordersDoc('Orders card', 'Open');
const CHANGED = ordersDoc('Orders card', 'Open now');
const REVENUE = ordersDoc('Revenue');

/**
 * The scripted replay: `title: X` retitles, `heading: X` adds a heading, `fail` throws, `nothing`
 * answers nothing, `bad` answers a document the Kit refuses, `broken query` one whose query fails.
 */
function applyWish({ document, wish }: AppReplayStep): unknown {
  const doc = structuredClone(document) as unknown as Doc & { root: { children: unknown[] } };
  if (wish.startsWith('title: ')) return { ...doc, title: wish.slice('title: '.length) };
  if (wish.startsWith('heading: ')) {
    doc.root.children.push({ component: 'Heading', props: { text: wish.slice('heading: '.length) } });
    return doc;
  }
  if (wish === 'fail') throw new Error('the replayer broke');
  if (wish === 'nothing') return undefined;
  if (wish === 'bad') return { ...doc, root: { component: 'NoSuchThing', props: {} } };
  if (wish === 'broken query') return { ...doc, queries: { orders: { tool: 'no_such_tool', input: {} } } };
  throw new Error(`unscripted wish ${wish}`);
}

for (const kind of STORE_KINDS) {
  describe(`apps rebase-pin (${kind})`, () => {
    let store: TestStore;
    /** Composed with the first seeds: remixes are made here. */
    let before: Service;
    let beforeHttp: Transport;
    /** Composed with the changed seed: remixes drift here and are rebased. */
    let after: Service;
    let http: Transport;
    let apps: AppStore;
    let serial = 0;
    const someone = () => `rebaser-${++serial}`;
    /** What the scripted replayer saw, and a hook a test may set to hold a step. */
    const steps: AppReplayStep[] = [];
    let hold: (() => Promise<void>) | null = null;
    const replay: AppReplayer = async (step) => {
      steps.push(step);
      if (hold) await hold();
      return applyWish(step);
    };
    const as = (user: string | null): Caller => callerFor(http.fetch, user);
    const asBefore = (user: string | null): Caller => callerFor(beforeHttp.fetch, user);

    beforeAll(async () => {
      store = await openTestStore(kind);
      before = await testService(store, {
        tools,
        apps: {
          seeds: [
            { component: 'OrdersCard', name: 'Orders card', document: FIRST },
            { component: 'RevenueCard', name: 'Revenue', document: REVENUE },
          ],
        },
      });
      beforeHttp = await connect('express', before);
      after = await testService(store, {
        tools,
        apps: { seeds: [{ component: 'OrdersCard', name: 'Orders card', document: CHANGED }], replay },
      });
      http = await connect('express', after);
      apps = new AppStore(store.db);
    });
    afterAll(async () => {
      await http?.close();
      await beforeHttp?.close();
      await after?.close();
      await before?.close();
      await store?.dispose();
    });

    const json = jsonOf;
    const expectError = wireErrorOf;
    const rebase = (user: string, id: string, body: unknown = {}) =>
      as(user)(`/apps/${id}/rebase-pin`, { method: 'POST', json: body });

    /** A remix of the first seed with `wishes` on its trail (one version each), drifted on `after`. */
    async function driftedRemix(owner: string, wishes: string[], component = 'OrdersCard') {
      const seeded = await json(
        await asBefore(owner)('/apps/seed', { method: 'POST', json: { component } }),
        201,
      );
      let document = seeded.app.current.document as Doc;
      for (const wish of wishes) {
        document = { ...document, title: `${document.title} +` };
        await apps.addVersion(owner, seeded.app.id, { document, contentHash: contentHash(document), wish });
      }
      return seeded.app.id as string;
    }
    /** What a rebase must leave alone when it fails. */
    async function snapshot(owner: string, id: string) {
      const app = await apps.getApp(owner, id);
      return {
        version: app?.version,
        baselineHash: app?.baselineHash,
        contentHash: app?.current.contentHash,
        trail: (await apps.trail(owner, id))?.map((w) => w.wish),
        history: (await apps.history(owner, id))?.map((v) => v.version),
      };
    }

    it('rebases a drifted remix: one new version from the changed seed with the trail replayed', async () => {
      const ada = someone();
      const id = await driftedRemix(ada, ['title: Mine', 'heading: Today']);
      const drifted = await json(await as(ada)(`/apps/${id}`), 200);
      expect(drifted.app).toMatchObject({ kind: 'remix', version: 3, drifted: true });
      expect((await json(await asBefore(ada)(`/apps/${id}`), 200)).app.drifted).toBe(false);
      expect(
        (await json(await as(ada)('/apps'), 200)).apps.find((a: { id: string }) => a.id === id),
      ).toMatchObject({ drifted: true });
      steps.length = 0;

      const answer = await json(await rebase(ada, id), 200);
      expect(answer.replayed).toBe(2);
      expect(answer.app).toMatchObject({
        id,
        version: 4,
        baselineKey: 'OrdersCard',
        baselineHash: contentHash(CHANGED),
        drifted: false,
        current: { version: 4 },
      });
      // Built from the changed seed, each wish applied in turn.
      const document = answer.app.current.document;
      expect(document.title).toBe('Mine');
      expect(document.root.children).toEqual([
        CHANGED.root.children[0],
        { component: 'Heading', props: { text: 'Today' } },
      ]);
      expect(answer.app.current.contentHash).toBe(contentHash(document));
      expect(steps.map((s) => s.wish)).toEqual(['title: Mine', 'heading: Today']);
      expect(steps[0]!.document).toEqual(CHANGED);
      expect(steps[1]!.document.title).toBe('Mine');

      expect(await snapshot(ada, id)).toMatchObject({
        version: 4,
        trail: ['title: Mine', 'heading: Today'],
        history: [4, 3, 2, 1],
      });
      expect((await json(await as(ada)(`/apps/${id}`), 200)).app.drifted).toBe(false);
      const activity = await json(await as(ada)('/activity'), 200);
      const rebased = activity.events.find((e: { kind: string }) => e.kind === 'app.rebased');
      expect(rebased).toBeDefined();
      expect(JSON.stringify(rebased)).toContain(id);

      // Now on the current baseline: a second rebase has nothing to do.
      await expectError(await rebase(ada, id), 409, 'not_drifted');
      expect((await snapshot(ada, id)).version).toBe(4);
    });

    it('rebases a remix with an empty trail to the changed seed itself', async () => {
      const ada = someone();
      const id = await driftedRemix(ada, []);
      const answer = await json(await rebase(ada, id, { fromVersion: 1 }), 200);
      expect(answer.replayed).toBe(0);
      expect(answer.app).toMatchObject({ version: 2, drifted: false, baselineHash: contentHash(CHANGED) });
      expect(answer.app.current.document).toEqual(CHANGED);
    });

    it('stops at the first wish that fails and writes nothing: a throw, no answer, a refused document', async () => {
      for (const failing of ['fail', 'nothing', 'bad', 'broken query']) {
        const ada = someone();
        const id = await driftedRemix(ada, ['title: Mine', failing, 'heading: Today']);
        const was = await snapshot(ada, id);
        steps.length = 0;
        const error = await expectError(await rebase(ada, id), 422, 'rebase_failed');
        expect(error, failing).toMatchObject({ replayed: 1, failed: 1, remaining: 1, wish: failing });
        expect(error.message).toMatch(/nothing was saved/);
        // The wish after the failed one was never asked for.
        expect(steps.map((s) => s.wish)).toEqual(['title: Mine', failing]);
        expect(await snapshot(ada, id)).toEqual(was);
        expect((await json(await as(ada)(`/apps/${id}`), 200)).app.drifted).toBe(true);
      }
    });

    it('refuses what cannot be rebased: on the baseline, no seed, moved, not a remix', async () => {
      const ada = someone();
      // Seeded on the changed seed: already on the current baseline.
      const current = await json(
        await as(ada)('/apps/seed', { method: 'POST', json: { component: 'OrdersCard' } }),
        201,
      );
      expect(current.app.drifted).toBe(false);
      await expectError(await rebase(ada, current.app.id), 409, 'not_drifted');

      // A component the changed composition no longer seeds: no baseline to move onto.
      const revenue = await driftedRemix(ada, ['title: R'], 'RevenueCard');
      expect((await json(await as(ada)(`/apps/${revenue}`), 200)).app.drifted).toBe(false);
      await expectError(await rebase(ada, revenue), 409, 'baseline_unknown');

      const bob = someone();
      const moved = await driftedRemix(bob, ['title: Mine']);
      const was = await snapshot(bob, moved);
      await expectError(await rebase(bob, moved, { fromVersion: 1 }), 409, 'app_moved');
      await expectError(await rebase(bob, moved, { fromVersion: 3 }), 409, 'app_moved');
      expect(await snapshot(bob, moved)).toEqual(was);
      expect((await json(await rebase(bob, moved, { fromVersion: 2 }), 200)).app.version).toBe(3);

      const plain = await apps.createApp(ada, { name: 'Plain', document: REVENUE, contentHash: 'sha256:x' });
      expect((await json(await as(ada)(`/apps/${plain.id}`), 200)).app.drifted).toBe(false);
      await expectError(await rebase(ada, plain.id), 400, 'not_a_remix');
    });

    it('answers another person’s remix exactly as a missing app, and moves nothing', async () => {
      const [ada, bob] = [someone(), someone()];
      const id = await driftedRemix(ada, ['title: Mine']);
      const was = await snapshot(ada, id);
      const answers = await Promise.all(
        [id, 'app_0000000000000000000000', 'not-an-app-id'].map(async (target) => {
          const response = await rebase(bob, target);
          return `${response.status} ${await response.text()}`;
        }),
      );
      expect(answers[0]).toBe('404 {"error":{"code":"not_found","message":"No such app."}}');
      expect(new Set(answers).size).toBe(1);
      expect(await snapshot(ada, id)).toEqual(was);
    });

    it('refuses malformed JSON and wrong types with a 400', async () => {
      const ada = someone();
      const id = await driftedRemix(ada, ['title: Mine']);
      const raw = await as(ada)(`/apps/${id}/rebase-pin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"fromVersion":',
      });
      await expectError(raw, 400, 'invalid_json');
      for (const body of [{ fromVersion: '2' }, { fromVersion: 1.5 }, { fromVersion: 0 }, { extra: 1 }, []]) {
        const error = await expectError(await rebase(ada, id, body), 400, 'validation_failed');
        expect(error.message).toMatch(/body/);
      }
      expect((await snapshot(ada, id)).version).toBe(2);
    });

    it('lets exactly one of two concurrent rebases through; the other is told the app moved', async () => {
      const ada = someone();
      const id = await driftedRemix(ada, ['title: Mine']);
      // Both replays start before either writes.
      let started = 0;
      let release: () => void = () => {};
      const bothStarted = new Promise<void>((resolve) => {
        release = resolve;
      });
      hold = async () => {
        if (++started === 2) release();
        await Promise.race([bothStarted, new Promise((resolve) => setTimeout(resolve, 3000))]);
      };
      try {
        const answers = await Promise.all([rebase(ada, id), rebase(ada, id)]);
        expect(started).toBe(2);
        const statuses = answers.map((r) => r.status).sort();
        expect(statuses).toEqual([200, 409]);
        const refused = answers.find((r) => r.status === 409)!;
        const { error } = await refused.json();
        expect(error.code).toBe('app_moved');
        // It names the version the winner wrote, not the one both started from.
        expect(error.message).toContain('its current version is 3');
      } finally {
        hold = null;
      }
      expect(await snapshot(ada, id)).toMatchObject({
        version: 3,
        trail: ['title: Mine'],
        history: [3, 2, 1],
        baselineHash: contentHash(CHANGED),
      });
    });

    it('gives the whole replay a time limit: past it the rebase fails with the counts, aborted, and writes nothing', async () => {
      const signals: AbortSignal[] = [];
      // The second wish never answers (unless its signal aborts).
      const hanging: AppReplayer = async (step) => {
        signals.push(step.signal!);
        if (step.wish !== 'heading: Today') return applyWish(step);
        return new Promise(() => {});
      };
      const limited = await testService(store, {
        tools,
        apps: {
          seeds: [{ component: 'OrdersCard', name: 'Orders card', document: CHANGED }],
          replay: hanging,
          rebaseTimeLimitMs: 300,
        },
      });
      const limitedHttp = await connect('express', limited);
      try {
        const ada = someone();
        const id = await driftedRemix(ada, ['title: Mine', 'heading: Today', 'title: Later']);
        const was = await snapshot(ada, id);
        const started = Date.now();
        const answer = await callerFor(limitedHttp.fetch, ada)(`/apps/${id}/rebase-pin`, {
          method: 'POST',
          json: {},
        });
        expect(Date.now() - started).toBeLessThan(5000);
        const error = await expectError(answer, 422, 'rebase_failed');
        expect(error).toMatchObject({ replayed: 1, failed: 1, remaining: 1, wish: 'heading: Today' });
        expect(error.message).toMatch(/took longer than 0\.3 s/);
        expect(signals.at(-1)?.aborted).toBe(true);
        expect(await snapshot(ada, id)).toEqual(was);
      } finally {
        await limitedHttp.close();
        await limited.close();
      }
      await expect(
        testService(store, { tools, apps: { rebaseTimeLimitMs: 'soon' as never } }),
      ).rejects.toThrow(/rebaseTimeLimitMs/);
    });

    it('refuses a replay option that is not a function at composition', async () => {
      await expect(testService(store, { tools, apps: { replay: 'model' as never } })).rejects.toThrow(
        /replay/,
      );
    });

    it('replays through the service’s own model by default: one required tool call per wish', async () => {
      const ada = someone();
      const bob = someone();
      const idAda = await driftedRemix(ada, ['title: Mine', 'heading: Today']);
      const idBob = await driftedRemix(bob, ['title: Mine', 'heading: Today']);
      const first = { ...CHANGED, title: 'Mine' };
      const second = {
        ...first,
        root: {
          ...first.root,
          children: [...first.root.children, { component: 'Heading', props: { text: 'Today' } }],
        },
      };
      const { model, calls } = scriptedModel([
        { toolCalls: [{ id: 'c1', name: 'apply_wish', input: { document: first } }] },
        { toolCalls: [{ id: 'c2', name: 'apply_wish', input: { document: second } }] },
        // Bob's replay: the first wish lands, the second gets words and no document.
        { toolCalls: [{ id: 'c3', name: 'apply_wish', input: { document: first } }] },
        { text: ['I would rather not.'] },
      ]);
      const modelled = await testService(store, {
        tools,
        model,
        apps: { seeds: [{ component: 'OrdersCard', name: 'Orders card', document: CHANGED }] },
      });
      const modelledHttp = await connect('express', modelled);
      try {
        const call = (user: string, id: string) =>
          callerFor(modelledHttp.fetch, user)(`/apps/${id}/rebase-pin`, { method: 'POST', json: {} });
        const answer = await json(await call(ada, idAda), 200);
        expect(answer).toMatchObject({ replayed: 2, app: { version: 4, drifted: false } });
        expect(answer.app.current.document).toEqual(second);
        expect(calls).toHaveLength(2);
        for (const [index, options] of calls.entries()) {
          expect(options.toolChoice).toEqual({ type: 'required' });
          expect(options.tools?.map((t) => t.name)).toEqual(['apply_wish']);
          const prompt = JSON.stringify(options.prompt);
          expect(prompt).toContain(['title: Mine', 'heading: Today'][index]);
          expect(prompt).toContain('Stat');
          expect(prompt).toContain('list_orders');
        }
        // The second call starts from the first's document.
        expect(JSON.stringify(calls[1]!.prompt)).toContain('\\"title\\":\\"Mine\\"');

        const was = await snapshot(bob, idBob);
        const error = await expectError(await call(bob, idBob), 422, 'rebase_failed');
        expect(error).toMatchObject({ replayed: 1, failed: 1, remaining: 0, wish: 'heading: Today' });
        expect(error.message).toMatch(/no document/);
        expect(await snapshot(bob, idBob)).toEqual(was);
      } finally {
        await modelledHttp.close();
        await modelled.close();
      }
    });
  });
}
