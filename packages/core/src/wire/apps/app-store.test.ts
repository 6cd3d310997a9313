import { Migrator } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, STORE_KINDS, type TestStore } from '../../../test/support/stores.js';
import { MIGRATIONS } from '../../store/migrations/index.js';
import { APP_HISTORY_LIMIT, APP_TRAIL_LIMIT, AppStore, SLOT_REPORT_TTL_MS } from './app-store.js';

const doc = (title: string) => ({ root: { component: 'text', props: { text: title } } });
const hashOf = (title: string) => `sha256:${title}`;
const version = (title: string, wish?: string) => ({
  document: doc(title),
  contentHash: hashOf(title),
  ...(wish !== undefined ? { wish } : {}),
});

for (const kind of STORE_KINDS) {
  describe(`AppStore (${kind})`, () => {
    let store: TestStore;
    let clock = Date.UTC(2030, 0, 1);
    let apps: AppStore;
    let serial = 0;
    /** A fresh owner per test, so tests never see each other's rows. */
    const someone = () => `user-${++serial}`;

    beforeAll(async () => {
      store = await openTestStore(kind);
      apps = new AppStore(store.db, () => clock);
    });
    afterAll(async () => store?.dispose());

    describe('apps and versions', () => {
      it('creates an app with its first version, and reads it back only for its owner', async () => {
        const [alice, bob] = [someone(), someone()];
        const app = await apps.createApp(alice, { name: 'Sales', ...version('v1', 'show my sales') });
        expect(app).toMatchObject({
          id: expect.stringMatching(/^app_[\w-]{22}$/),
          owner: alice,
          name: 'Sales',
          kind: 'app',
          version: 1,
          servedVersion: 1,
          forkedFrom: null,
          current: { version: 1, contentHash: hashOf('v1'), document: doc('v1'), review: null },
        });
        expect(await apps.getApp(alice, app.id)).toEqual(app);
        expect(await apps.trail(alice, app.id)).toMatchObject([{ seq: 1, wish: 'show my sales' }]);

        // Another owner's app answers exactly as a missing one, on every read.
        for (const reader of [bob, 'nobody']) {
          expect(await apps.getApp(reader, app.id)).toBeNull();
          expect(await apps.getVersion(reader, app.id, 1)).toBeNull();
          expect(await apps.history(reader, app.id)).toBeNull();
          expect(await apps.trail(reader, app.id)).toBeNull();
          expect(await apps.listApps(reader)).toEqual([]);
        }
        expect(await apps.getApp(alice, 'app_missing')).toBeNull();
        expect((await apps.listApps(alice)).map((a) => a.id)).toEqual([app.id]);
      });

      it('numbers versions, keeps the newest twenty, and lists the newest first', async () => {
        const owner = someone();
        const app = await apps.createApp(owner, { name: 'Grows', ...version('0') });
        for (let i = 1; i <= 24; i += 1) {
          clock += 1000;
          const added = await apps.addVersion(owner, app.id, version(String(i), `wish ${i}`));
          expect(added).toMatchObject({ version: i + 1, contentHash: hashOf(String(i)) });
        }
        const history = await apps.history(owner, app.id);
        expect(history?.map((v) => v.version)).toEqual(range(25, 25 - APP_HISTORY_LIMIT + 1));
        expect(await apps.getVersion(owner, app.id, 5)).toBeNull();
        expect(await apps.getVersion(owner, app.id, 6)).toMatchObject({ version: 6, document: doc('5') });
        expect(await apps.getApp(owner, app.id)).toMatchObject({
          version: 25,
          current: { document: doc('24') },
        });
        expect((await apps.trail(owner, app.id))?.map((w) => w.seq)).toEqual(range(1, 24));
        // The most recently changed app lists first.
        clock += 1000;
        const other = await apps.createApp(owner, { name: 'Newer', ...version('x') });
        expect((await apps.listApps(owner)).map((a) => a.id)).toEqual([other.id, app.id]);
        clock += 1000;
        await apps.addVersion(owner, app.id, version('25'));
        expect((await apps.listApps(owner)).map((a) => a.id)).toEqual([app.id, other.id]);
      });

      it('keeps the newest fifty wishes of a trail, on append and on rewrite', async () => {
        const owner = someone();
        const app = await apps.createApp(owner, { name: 'Wishful', ...version('0') });
        for (let i = 1; i <= APP_TRAIL_LIMIT + 5; i += 1) await apps.appendWish(owner, app.id, `wish ${i}`);
        const trail = (await apps.trail(owner, app.id)) ?? [];
        expect(trail).toHaveLength(APP_TRAIL_LIMIT);
        expect(trail.map((w) => w.seq)).toEqual(range(6, APP_TRAIL_LIMIT + 5));
        expect(trail.at(-1)?.wish).toBe(`wish ${APP_TRAIL_LIMIT + 5}`);
        await apps.rewriteTrail(
          owner,
          app.id,
          range(1, APP_TRAIL_LIMIT + 2).map((i) => `again ${i}`),
        );
        const rewritten = (await apps.trail(owner, app.id)) ?? [];
        expect(rewritten.map((w) => w.wish)).toEqual(range(3, APP_TRAIL_LIMIT + 2).map((i) => `again ${i}`));
      });

      it('gives racing edits distinct numbers, one after another', async () => {
        const owner = someone();
        const app = await apps.createApp(owner, { name: 'Raced', ...version('0') });
        const added = await Promise.all(
          range(1, 10).map((i) => apps.addVersion(owner, app.id, version(`r${i}`, `wish ${i}`))),
        );
        expect(added.map((v) => v?.version).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(range(2, 11));
        expect((await apps.trail(owner, app.id))?.map((w) => w.seq)).toEqual(range(1, 10));
      });

      it('refuses another owner an edit, a wish, a trail rewrite and a delete, changing nothing', async () => {
        const [alice, bob] = [someone(), someone()];
        const app = await apps.createApp(alice, { name: 'Mine', ...version('v1', 'first') });
        await apps.place(alice, 'home.side', app.id);
        expect(await apps.addVersion(bob, app.id, version('evil'))).toBeNull();
        expect(await apps.appendWish(bob, app.id, 'evil')).toBeNull();
        expect(await apps.rewriteTrail(bob, app.id, ['evil'])).toBe(false);
        expect(await apps.deleteApp(bob, app.id)).toBeNull();
        expect(await apps.forkApp(bob, app.id)).toBeNull();
        expect(await apps.place(bob, 'home.side', app.id)).toBeNull();
        expect(await apps.placements(bob)).toEqual([]);
        expect(await apps.getApp(alice, app.id)).toMatchObject({
          version: 1,
          current: { document: doc('v1') },
        });
        expect(await apps.trail(alice, app.id)).toMatchObject([{ seq: 1, wish: 'first' }]);
        expect(await apps.placements(alice)).toMatchObject([{ slotId: 'home.side', appId: app.id }]);
      });

      it('deletes an app with its versions and trail, clearing the slots it was placed in', async () => {
        const owner = someone();
        const app = await apps.createApp(owner, { name: 'Doomed', ...version('v1', 'a') });
        const kept = await apps.createApp(owner, { name: 'Kept', ...version('k1') });
        await apps.addVersion(owner, app.id, version('v2', 'b'));
        await apps.place(owner, 'b.slot', app.id);
        await apps.place(owner, 'a.slot', app.id);
        await apps.place(owner, 'c.slot', kept.id);
        expect(await apps.deleteApp(owner, app.id)).toEqual({ clearedSlots: ['a.slot', 'b.slot'] });
        expect(await apps.getApp(owner, app.id)).toBeNull();
        expect(await apps.placements(owner)).toMatchObject([{ slotId: 'c.slot', appId: kept.id }]);
        for (const table of ['wire_app_versions', 'wire_app_trail'] as const) {
          const rows = await store.db
            .selectFrom(table)
            .select('app_id')
            .where('app_id', '=', app.id)
            .execute();
          expect(rows).toEqual([]);
        }
        expect(await apps.deleteApp(owner, app.id)).toBeNull();
        // A placement racing the delete never outlives the app.
        const raced = await apps.createApp(owner, { name: 'Raced', ...version('r') });
        const [, placed] = await Promise.all([
          apps.deleteApp(owner, raced.id),
          apps.place(owner, 'd.slot', raced.id),
        ]);
        expect(placed === null || placed.evicted === null).toBe(true);
        expect((await apps.placements(owner)).map((p) => p.appId)).toEqual([kept.id]);
      });

      it('forks under a fresh id from the current version, keeping where it came from', async () => {
        const owner = someone();
        const { app: remix } = await apps.remixFor(owner, {
          name: 'My table',
          kind: 'remix',
          baselineKey: 'orders-table',
          baselineHash: 'b1',
          ...version('r1', 'bigger'),
        });
        await apps.addVersion(owner, remix.id, version('r2', 'bluer'));
        const fork = await apps.forkApp(owner, remix.id, 'My copy');
        expect(fork).toMatchObject({
          name: 'My copy',
          kind: 'app',
          forkedFrom: remix.id,
          baselineKey: 'orders-table',
          baselineHash: 'b1',
          version: 1,
          current: { document: doc('r2'), contentHash: hashOf('r2') },
        });
        expect(fork?.id).not.toBe(remix.id);
        expect(await apps.trail(owner, fork?.id ?? '')).toEqual([]);
        // The fork is no second remix: the person's remix of the component is still the original.
        const again = await apps.remixFor(owner, {
          name: 'x',
          kind: 'remix',
          baselineKey: 'orders-table',
          baselineHash: 'b1',
          ...version('other'),
        });
        expect(again).toMatchObject({ created: false, app: { id: remix.id } });
      });
    });

    describe('remixes', () => {
      it('converges racing remix gestures of one person on one app, and keeps people apart', async () => {
        const [alice, bob] = [someone(), someone()];
        const gesture = (owner: string, i: number) =>
          apps.remixFor(owner, {
            name: `Remix ${i}`,
            kind: 'remix',
            baselineKey: 'revenue-card',
            baselineHash: 'h1',
            ...version(`doc ${i}`, `wish ${i}`),
          });
        const results = await Promise.all([...range(1, 6).map((i) => gesture(alice, i)), gesture(bob, 0)]);
        const alices = results.slice(0, 6);
        expect(new Set(alices.map((r) => r.app.id)).size).toBe(1);
        expect(alices.filter((r) => r.created)).toHaveLength(1);
        const winner = alices.find((r) => r.created)?.app;
        for (const r of alices) expect(r.app).toEqual(winner);
        expect(await apps.listApps(alice)).toHaveLength(1);
        expect(await apps.history(alice, winner?.id ?? '')).toHaveLength(1);
        expect(await apps.trail(alice, winner?.id ?? '')).toHaveLength(1);
        const bobs = results[6];
        expect(bobs?.created).toBe(true);
        expect(bobs?.app.id).not.toBe(winner?.id);
      });

      it('rebases into exactly one new version with the replayed trail, all or nothing', async () => {
        const owner = someone();
        const { app } = await apps.remixFor(owner, {
          name: 'Card',
          kind: 'remix',
          baselineKey: 'card',
          baselineHash: 'h1',
          ...version('c1', 'make it red'),
        });
        await apps.addVersion(owner, app.id, version('c2', 'add a total'));

        // A failing write (Postgres refuses NUL in text) leaves version, baseline and trail as they were.
        await expect(
          apps.rebase(owner, app.id, {
            fromVersion: 2,
            baselineHash: 'h2',
            ...version('c3'),
            wishes: ['make it red', 'bad \u0000 wish'],
          }),
        ).rejects.toThrow();
        expect(await apps.getApp(owner, app.id)).toMatchObject({ version: 2, baselineHash: 'h1' });
        expect((await apps.trail(owner, app.id))?.map((w) => w.wish)).toEqual(['make it red', 'add a total']);

        // A rebase that started before the last edit is refused: that edit is not in its replay.
        expect(
          await apps.rebase(owner, app.id, {
            fromVersion: 1,
            baselineHash: 'h2',
            ...version('c3'),
            wishes: [],
          }),
        ).toEqual({ ok: false, reason: 'moved' });

        const rebase = () =>
          apps.rebase(owner, app.id, {
            fromVersion: 2,
            baselineHash: 'h2',
            ...version('c3'),
            wishes: ['make it red', 'add a total'],
          });
        const outcomes = await Promise.all([rebase(), rebase()]);
        expect(outcomes).toContainEqual({ ok: true, version: 3 });
        expect(outcomes).toContainEqual({ ok: false, reason: 'moved' });
        expect(await apps.getApp(owner, app.id)).toMatchObject({
          version: 3,
          baselineHash: 'h2',
          current: { document: doc('c3') },
        });
        expect((await apps.history(owner, app.id))?.map((v) => v.version)).toEqual([3, 2, 1]);
        expect((await apps.trail(owner, app.id))?.map((w) => [w.seq, w.wish])).toEqual([
          [1, 'make it red'],
          [2, 'add a total'],
        ]);
        expect(
          await apps.rebase(someone(), app.id, {
            fromVersion: 3,
            baselineHash: 'h3',
            ...version('z'),
            wishes: [],
          }),
        ).toEqual({
          ok: false,
          reason: 'not_found',
        });
        const plain = await apps.createApp(owner, { name: 'Plain', ...version('p') });
        expect(
          await apps.rebase(owner, plain.id, {
            fromVersion: 1,
            baselineHash: 'h',
            ...version('z'),
            wishes: [],
          }),
        ).toEqual({
          ok: false,
          reason: 'not_found',
        });
      });

      it('rewrites the trail whole, or not at all', async () => {
        const owner = someone();
        const app = await apps.createApp(owner, { name: 'Trail', ...version('t', 'one') });
        expect(await apps.appendWish(owner, app.id, 'two')).toBe(2);
        await expect(apps.rewriteTrail(owner, app.id, ['fine', 'bad \u0000'])).rejects.toThrow();
        expect((await apps.trail(owner, app.id))?.map((w) => w.wish)).toEqual(['one', 'two']);
        expect(await apps.rewriteTrail(owner, app.id, ['only'])).toBe(true);
        expect((await apps.trail(owner, app.id))?.map((w) => [w.seq, w.wish])).toEqual([[1, 'only']]);
        expect(await apps.rewriteTrail(owner, app.id, [])).toBe(true);
        expect(await apps.trail(owner, app.id)).toEqual([]);
        expect(await apps.appendWish(owner, app.id, 'again')).toBe(1);
      });
    });

    describe('placements', () => {
      it('places one app per person per slot and reports what each placement evicted', async () => {
        const [alice, bob] = [someone(), someone()];
        const a1 = await apps.createApp(alice, { name: 'A1', ...version('a1') });
        const a2 = await apps.createApp(alice, { name: 'A2', ...version('a2') });
        const b1 = await apps.createApp(bob, { name: 'B1', ...version('b1') });
        expect(await apps.place(alice, 'home.main', a1.id)).toEqual({ evicted: null });
        expect(await apps.place(bob, 'home.main', b1.id)).toEqual({ evicted: null });
        expect(await apps.place(alice, 'home.main', a1.id)).toEqual({ evicted: null });
        expect(await apps.place(alice, 'home.main', a2.id)).toEqual({ evicted: a1.id });
        expect(await apps.place(alice, 'home.main', 'app_missing')).toBeNull();
        expect(await apps.place(alice, 'home.main', b1.id)).toBeNull();
        expect(await apps.placements(alice)).toMatchObject([{ slotId: 'home.main', appId: a2.id }]);
        expect(await apps.placements(bob)).toMatchObject([{ slotId: 'home.main', appId: b1.id }]);
        expect(await apps.unplace(bob, 'home.nothing')).toBeNull();
        expect(await apps.unplace(bob, 'home.main')).toBe(b1.id);
        expect(await apps.placements(bob)).toEqual([]);
        expect(await apps.placements(alice)).toMatchObject([{ slotId: 'home.main', appId: a2.id }]);
        expect(await apps.place(bob, 'home.main', b1.id)).toEqual({ evicted: null });
      });

      it('reports each eviction exactly once when placements race on one slot', async () => {
        const owner = someone();
        const first = await apps.createApp(owner, { name: 'First', ...version('first') });
        const racers = await Promise.all(
          range(1, 8).map((i) => apps.createApp(owner, { name: `R${i}`, ...version(`r${i}`) })),
        );
        for (const start of [null, first.id]) {
          if (start) await apps.place(owner, 'race.slot', start);
          else await apps.unplace(owner, 'race.slot');
          const results = await Promise.all(racers.map((app) => apps.place(owner, 'race.slot', app.id)));
          const evicted = results
            .map((r) => r?.evicted)
            .filter((id): id is string => id !== null && id !== undefined);
          const [held] = await apps.placements(owner);
          // Every app that held the slot was evicted once, except the one holding it now.
          const everyHolder = [...(start ? [start] : []), ...racers.map((app) => app.id)];
          expect([...evicted, held?.appId].sort()).toEqual(everyHolder.sort());
          expect(results.filter((r) => r?.evicted === null)).toHaveLength(start ? 0 : 1);
        }
      });
    });

    describe('slots', () => {
      it('sweeps slot build records a crashed process left past their age, keeping builds in flight', async () => {
        const owner = someone();
        await apps.startSlotBuild(owner, 'home.crashed', 'app_crashed');
        await apps.startSlotBuild(owner, 'home.live', 'app_live');
        await store.db
          .updateTable('wire_slot_builds')
          .set({ started_at: new Date(Date.now() - 60_000) })
          .where('owner', '=', owner)
          .where('app_id', '=', 'app_crashed')
          .execute();
        await apps.sweepSlots(30_000);
        const rows = await store.db
          .selectFrom('wire_slot_builds')
          .select('app_id')
          .where('owner', '=', owner)
          .execute();
        expect(rows.map((r) => r.app_id)).toEqual(['app_live']);
      });

      it('lists reported slots until their reports expire, and declared ones always', async () => {
        const base = clock;
        await apps.reportSlots('/dashboard', [
          { id: 'dash.top', label: 'Top of the dashboard' },
          { id: 'dash.side', label: 'Old label' },
          { id: 'dash.side', label: 'Sidebar' },
        ]);
        await apps.declareSlots([{ id: 'orders.footer', page: '/orders', label: 'Below the orders' }]);
        expect(await apps.listSlots()).toEqual([
          {
            id: 'dash.side',
            page: '/dashboard',
            label: 'Sidebar',
            declared: false,
            reportedAt: new Date(base),
          },
          {
            id: 'dash.top',
            page: '/dashboard',
            label: 'Top of the dashboard',
            declared: false,
            reportedAt: new Date(base),
          },
          {
            id: 'orders.footer',
            page: '/orders',
            label: 'Below the orders',
            declared: true,
            reportedAt: null,
          },
        ]);

        clock = base + SLOT_REPORT_TTL_MS - 1000;
        await apps.reportSlots('/dashboard', [{ id: 'dash.top', label: 'Top' }]);
        clock = base + SLOT_REPORT_TTL_MS;
        expect((await apps.listSlots()).map((s) => s.id)).toEqual(['dash.top', 'orders.footer']);
        expect(await apps.sweepSlots()).toBe(1);
        const rows = await store.db.selectFrom('wire_slots').select('id').orderBy('id').execute();
        expect(rows.map((r) => r.id)).toEqual(['dash.top', 'orders.footer']);

        // A new declaration replaces the old: a slot no longer declared lasts only as long as its report.
        await apps.reportSlots('/orders', [{ id: 'orders.footer', label: 'Footer' }]);
        await apps.declareSlots([{ id: 'dash.top', page: '/dashboard', label: 'Declared top' }]);
        expect(await apps.listSlots()).toMatchObject([
          { id: 'dash.top', label: 'Declared top', declared: true },
          { id: 'orders.footer', label: 'Footer', declared: false },
        ]);
        clock += 10 * SLOT_REPORT_TTL_MS;
        expect((await apps.listSlots()).map((s) => s.id)).toEqual(['dash.top']);
        await apps.declareSlots([]);
        await apps.sweepSlots();
        expect(await apps.listSlots()).toEqual([]);
      });
    });

    describe('review', () => {
      const reviewRemix = (owner: string, key: string) =>
        apps.remixFor(owner, {
          name: 'Reviewed',
          kind: 'review',
          baselineKey: key,
          baselineHash: 'h1',
          ...version(`${key} v1`),
        });
      const queued = async (appId: string) =>
        (await apps.reviewQueue()).filter((item) => item.appId === appId);

      it('serves the original until a reviewer approves that exact version', async () => {
        const owner = someone();
        const { app } = await reviewRemix(owner, 'pricing');
        expect(app).toMatchObject({
          kind: 'review',
          servedVersion: null,
          current: { review: { status: 'pending' } },
        });
        expect(await queued(app.id)).toEqual([
          {
            appId: app.id,
            owner,
            name: 'Reviewed',
            baselineKey: 'pricing',
            version: 1,
            contentHash: hashOf('pricing v1'),
            createdAt: expect.any(Date),
          },
        ]);
        expect(await apps.approve(app.id, 'sha256:something else', 'rev')).toEqual({
          ok: false,
          reason: 'stale',
        });
        expect(await apps.approve('app_missing', hashOf('pricing v1'), 'rev')).toEqual({
          ok: false,
          reason: 'not_found',
        });
        expect(await apps.approve(app.id, hashOf('pricing v1'), 'rev')).toEqual({ ok: true, version: 1 });
        expect(await apps.approve(app.id, hashOf('pricing v1'), 'rev')).toEqual({
          ok: false,
          reason: 'not_pending',
        });
        expect(await apps.getApp(owner, app.id)).toMatchObject({
          servedVersion: 1,
          approvedHash: hashOf('pricing v1'),
          current: { review: { status: 'approved', reviewedBy: 'rev', note: null } },
        });
        expect(await queued(app.id)).toEqual([]);

        // The next version re-enters the queue; the approved one keeps serving meanwhile.
        await apps.addVersion(owner, app.id, version('pricing v2'));
        expect(await queued(app.id)).toMatchObject([{ version: 2 }]);
        expect(await apps.getApp(owner, app.id)).toMatchObject({ version: 2, servedVersion: 1 });
        // A reviewer who saw version 1 cannot approve version 2 by accident.
        expect(await apps.reject(app.id, hashOf('pricing v1'), 'no', 'rev')).toEqual({
          ok: false,
          reason: 'stale',
        });
        expect(await apps.reject(app.id, hashOf('pricing v2'), '  ', 'rev')).toEqual({
          ok: false,
          reason: 'note_required',
        });
        expect(await apps.reject(app.id, hashOf('pricing v2'), 'Hides the tax line', 'rev')).toEqual({
          ok: true,
          version: 2,
        });
        expect(await queued(app.id)).toEqual([]);
        expect(await apps.getApp(owner, app.id)).toMatchObject({
          servedVersion: 1,
          current: { review: { status: 'rejected', note: 'Hides the tax line' } },
        });

        // However many versions follow, the approved one is kept: it is what serves.
        for (let i = 3; i <= APP_HISTORY_LIMIT + 5; i += 1)
          await apps.addVersion(owner, app.id, version(`pricing v${i}`));
        const history = await apps.history(owner, app.id);
        expect(history).toHaveLength(APP_HISTORY_LIMIT + 1);
        expect(history?.at(-1)).toMatchObject({ version: 1, review: { status: 'approved' } });
        expect(await apps.getVersion(owner, app.id, 1)).toMatchObject({ document: doc('pricing v1') });
        expect(await queued(app.id)).toMatchObject([{ version: APP_HISTORY_LIMIT + 5 }]);
      });

      it('queues only review apps, oldest first, and never plain apps or remixes', async () => {
        const owner = someone();
        const plain = await apps.createApp(owner, { name: 'Plain', ...version('p') });
        const { app: remix } = await apps.remixFor(owner, {
          name: 'Remix',
          kind: 'remix',
          baselineKey: 'k-remix',
          baselineHash: 'h',
          ...version('r'),
        });
        clock += 1000;
        const { app: first } = await reviewRemix(owner, 'k-first');
        clock += 1000;
        const { app: second } = await reviewRemix(someone(), 'k-second');
        const ids = (await apps.reviewQueue()).map((item) => item.appId);
        expect(ids).not.toContain(plain.id);
        expect(ids).not.toContain(remix.id);
        expect(ids.indexOf(first.id)).toBeLessThan(ids.indexOf(second.id));
        expect(remix.current.review).toBeNull();
        expect(await apps.approve(remix.id, hashOf('r'), 'rev')).toEqual({ ok: false, reason: 'not_found' });
      });
    });
  });
}

describe('the wire apps migration', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore('pglite');
  });
  afterAll(async () => store?.dispose());

  it('goes down to the previous schema and up again', async () => {
    const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => MIGRATIONS } });
    const tables = async () =>
      (await store.db.introspection.getTables())
        .map((t) => t.name)
        .filter((name) => /^wire_(apps?_|slots|placements|apps$)/.test(name));
    expect((await tables()).sort()).toEqual([
      'wire_app_trail',
      'wire_app_versions',
      'wire_apps',
      'wire_placements',
      'wire_slots',
    ]);
    const down = await migrator.migrateTo('0021-end-user-connections');
    expect(down.error).toBeUndefined();
    expect(await tables()).toEqual([]);
    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
    expect(await tables()).toHaveLength(5);
  });
});

function range(from: number, to: number): number[] {
  const step = from <= to ? 1 : -1;
  return Array.from({ length: Math.abs(to - from) + 1 }, (_, i) => from + i * step);
}
