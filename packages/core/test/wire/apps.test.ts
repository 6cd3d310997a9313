/**
 * The apps routes over real HTTP (a real Express server on loopback), on every store kind: the
 * person's apps (list, read, delete, history, fork, export), placements in the slots host pages
 * report, the review queue (reviewers only, exact content hash), owner isolation (another
 * person's app answers exactly as a missing one), the fixed words never read as an app id, and
 * refusals of bad input. Apps are made through the app store itself: the routes that build them
 * need the document model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppStore } from '../../src/wire/apps/app-store.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { jsonOf, wireErrorOf } from './support/answers.js';
import { connect, type Transport } from './support/transports.js';
import { type Caller, callerFor, testService } from './support/wire.js';

const doc = (title: string) => ({ root: { component: 'text', props: { text: title } } });
const made = (title: string, wish?: string) => ({
  document: doc(title),
  contentHash: `sha256:${title}`,
  ...(wish !== undefined ? { wish } : {}),
});

for (const kind of STORE_KINDS) {
  describe(`apps routes (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    let http: Transport;
    let apps: AppStore;
    let serial = 0;
    /** A fresh person per test, so tests never see each other's apps. */
    const someone = () => `person-${++serial}`;
    const as = (user: string | null): Caller => callerFor(http.fetch, user);

    beforeAll(async () => {
      store = await openTestStore(kind);
      service = await testService(store, { apps: { reviewer: (user) => user.subject === 'rita' } });
      http = await connect('express', service);
      apps = new AppStore(store.db);
    });
    afterAll(async () => {
      await http?.close();
      await service?.close();
      await store?.dispose();
    });

    const json = jsonOf;
    const expectError = async (response: Response, status: number, code: string): Promise<string> =>
      (await wireErrorOf(response, status, code)).message;
    async function reportSlots(user: string, pageName: string, ids: string[]) {
      const slots = ids.map((id) => ({ id, label: `Slot ${id}` }));
      return json(await as(user)('/slots', { method: 'POST', json: { page: pageName, slots } }), 200);
    }

    describe('the person’s apps', () => {
      it('lists, reads, forks and deletes the person’s own apps', async () => {
        const ada = someone();
        const sales = await apps.createApp(ada, { name: 'Sales', ...made('sales v1', 'show my sales') });
        await apps.addVersion(ada, sales.id, made('sales v2', 'add a chart'));
        const stock = await apps.createApp(ada, { name: 'Stock', ...made('stock') });

        const list = await json(await as(ada)('/apps'), 200);
        expect(list.apps.map((a: { id: string }) => a.id).sort()).toEqual([sales.id, stock.id].sort());
        expect(list.apps[0]).not.toHaveProperty('owner');
        expect(list.apps[0]).not.toHaveProperty('current');

        const read = await json(await as(ada)(`/apps/${sales.id}`), 200);
        expect(read.app).toMatchObject({
          id: sales.id,
          name: 'Sales',
          kind: 'app',
          version: 2,
          servedVersion: 2,
          current: { version: 2, contentHash: 'sha256:sales v2', review: null, document: doc('sales v2') },
        });

        const history = await json(await as(ada)(`/apps/${sales.id}/history`), 200);
        expect(history.versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);
        expect(history.versions[0]).not.toHaveProperty('document');

        const fork = await json(
          await as(ada)(`/apps/${sales.id}/fork`, { method: 'POST', json: { name: 'Sales (mine)' } }),
          201,
        );
        expect(fork.app).toMatchObject({
          name: 'Sales (mine)',
          kind: 'app',
          forkedFrom: sales.id,
          version: 1,
          current: { document: doc('sales v2'), contentHash: 'sha256:sales v2' },
        });
        expect(fork.app.id).not.toBe(sales.id);
        const unnamed = await json(
          await as(ada)(`/apps/${sales.id}/fork`, { method: 'POST', json: {} }),
          201,
        );
        expect(unnamed.app.name).toBe('Sales');

        const deleted = await json(await as(ada)(`/apps/${stock.id}`, { method: 'DELETE', json: {} }), 200);
        expect(deleted).toEqual({ deleted: true, id: stock.id, clearedSlots: [] });
        await expectError(await as(ada)(`/apps/${stock.id}`), 404, 'not_found');
        const activity = await json(await as(ada)('/activity'), 200);
        expect(activity.events.map((e: { kind: string }) => e.kind)).toEqual(
          expect.arrayContaining(['app.forked', 'app.deleted']),
        );
      });

      it('answers another person’s app exactly as a missing one, on every route', async () => {
        const [ada, bob] = [someone(), someone()];
        const own = await apps.createApp(ada, { name: 'Private', ...made('private') });
        await reportSlots(ada, '/home', ['iso.main']);
        const bodies = async (id: string) => {
          const answers = [
            await as(bob)(`/apps/${id}`),
            await as(bob)(`/apps/${id}/history`),
            await as(bob)(`/apps/${id}/export`),
            await as(bob)(`/apps/${id}/fork`, { method: 'POST', json: {} }),
            await as(bob)(`/apps/${id}`, { method: 'DELETE', json: {} }),
            await as(bob)('/apps/placements', { method: 'PUT', json: { slot: 'iso.main', appId: id } }),
          ];
          return Promise.all(answers.map(async (r) => `${r.status} ${await r.text()}`));
        };
        const theirs = await bodies(own.id);
        expect(theirs[0]).toBe('404 {"error":{"code":"not_found","message":"No such app."}}');
        expect(new Set(theirs).size).toBe(1);
        expect(await bodies('app_0000000000000000000000')).toEqual(theirs);
        expect(await bodies('not-an-app-id')).toEqual(theirs);
        expect((await json(await as(bob)('/apps'), 200)).apps).toEqual([]);
        // Nothing of Ada's moved.
        const still = await json(await as(ada)(`/apps/${own.id}`), 200);
        expect(still.app.version).toBe(1);
        expect((await json(await as(ada)('/apps/placements'), 200)).placements).toEqual([]);
        expect((await json(await as(bob)('/apps/placements'), 200)).placements).toEqual([]);
      });

      it('lists only the person’s remix of a component with ?component=', async () => {
        const [ada, bob, cy] = [someone(), someone(), someone()];
        const remixOf = (owner: string, component: string, kind: 'remix' | 'review' = 'remix') =>
          apps.remixFor(owner, {
            name: component,
            kind,
            baselineKey: component,
            baselineHash: `sha256:${component}`,
            ...made(`${owner} ${component}`),
          });
        const orders = (await remixOf(ada, 'OrdersCard')).app;
        const stock = (await remixOf(ada, 'Stock.card:v2', 'review')).app;
        const bobs = (await remixOf(bob, 'OrdersCard')).app;
        // A plain app carrying the same baseline key is not a remix of the component.
        await apps.createApp(ada, {
          name: 'Imported',
          baselineKey: 'OrdersCard',
          baselineHash: 'sha256:OrdersCard',
          ...made('imported'),
        });
        await apps.createApp(ada, { name: 'Plain', ...made('plain') });
        const listed = async (user: string, query: string) =>
          (await json(await as(user)(`/apps?${query}`), 200)).apps.map((a: { id: string }) => a.id);

        expect(await listed(ada, 'component=OrdersCard')).toEqual([orders.id]);
        expect(await listed(ada, 'component=Stock.card%3Av2&limit=1')).toEqual([stock.id]);
        expect(await listed(bob, 'component=OrdersCard')).toEqual([bobs.id]);
        expect(await listed(bob, 'component=Stock.card%3Av2')).toEqual([]);
        expect(await listed(cy, 'component=OrdersCard')).toEqual([]);
        expect(await listed(ada, 'component=ordersCard')).toEqual([]);
        expect(await listed(ada, '')).toHaveLength(4);
        const [answer] = (await json(await as(ada)('/apps?component=OrdersCard'), 200)).apps;
        expect(answer).toMatchObject({ id: orders.id, kind: 'remix', baselineKey: 'OrdersCard' });
        expect(answer).not.toHaveProperty('owner');

        for (const bad of ['', '-OrdersCard', 'Orders%20Card', 'Orders%2FCard', 'x'.repeat(129)]) {
          const message = await expectError(
            await as(ada)(`/apps?component=${bad}`),
            400,
            'validation_failed',
          );
          expect(message, bad).toMatch(/component/);
        }
        await expectError(await as(null)('/apps?component=OrdersCard'), 403, 'principal_required');
      });

      it('exports only the allowlisted fields, as the import media type', async () => {
        const ada = someone();
        const remix = await apps.remixFor(ada, {
          name: 'Orders card',
          kind: 'remix',
          baselineKey: 'OrdersCard',
          baselineHash: 'sha256:base',
          ...made('remixed', 'make it blue'),
        });
        const response = await as(ada)(`/apps/${remix.app.id}/export`);
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('application/vnd.service.app+json');
        expect(response.headers.get('content-disposition')).toBe(
          `attachment; filename="${remix.app.id}.service-app.json"`,
        );
        const file = await response.json();
        expect(Object.keys(file).sort()).toEqual(
          [
            'baseline',
            'contentHash',
            'document',
            'exportedAt',
            'format',
            'formatVersion',
            'kind',
            'name',
            'source',
          ].sort(),
        );
        expect(file).toMatchObject({
          format: 'service-app',
          formatVersion: 1,
          name: 'Orders card',
          kind: 'remix',
          document: doc('remixed'),
          contentHash: 'sha256:remixed',
          baseline: { key: 'OrdersCard', hash: 'sha256:base' },
          source: { appId: remix.app.id, version: 1 },
        });
        // The person's words and identity stay home.
        expect(JSON.stringify(file)).not.toContain('make it blue');
        expect(JSON.stringify(file)).not.toContain(ada);
      });
    });

    describe('slots and placements', () => {
      it('places, reports the evicted app, unplaces, and clears placements of a deleted app', async () => {
        const ada = someone();
        const pageName = `/orders-${ada}`;
        const reported = await reportSlots(ada, pageName, [`${ada}.top`, `${ada}.side`]);
        expect(reported.reported).toEqual([`${ada}.top`, `${ada}.side`]);
        const slots = await json(await as(ada)(`/slots?page=${encodeURIComponent(pageName)}`), 200);
        expect(slots.slots).toEqual([
          expect.objectContaining({
            id: `${ada}.side`,
            page: pageName,
            label: `Slot ${ada}.side`,
            declared: false,
          }),
          expect.objectContaining({ id: `${ada}.top`, page: pageName, declared: false }),
        ]);

        const one = await apps.createApp(ada, { name: 'One', ...made('one') });
        const two = await apps.createApp(ada, { name: 'Two', ...made('two') });
        const place = (slot: string, appId: string) =>
          as(ada)('/apps/placements', { method: 'PUT', json: { slot, appId } });
        expect(await json(await place(`${ada}.top`, one.id), 200)).toEqual({
          slot: `${ada}.top`,
          appId: one.id,
          evicted: null,
        });
        expect((await json(await place(`${ada}.top`, two.id), 200)).evicted).toBe(one.id);
        expect((await json(await place(`${ada}.top`, two.id), 200)).evicted).toBeNull();
        await json(await place(`${ada}.side`, two.id), 200);

        const placed = await json(
          await as(ada)(`/apps/placements?page=${encodeURIComponent(pageName)}`),
          200,
        );
        expect(placed.placements).toEqual([
          expect.objectContaining({ slot: `${ada}.side`, appId: two.id }),
          expect.objectContaining({ slot: `${ada}.top`, appId: two.id }),
        ]);
        expect((await json(await as(ada)('/apps/placements?page=/elsewhere'), 200)).placements).toEqual([]);

        const unplaced = await as(ada)('/apps/placements', {
          method: 'DELETE',
          json: { slot: `${ada}.side` },
        });
        expect(await json(unplaced, 200)).toEqual({ slot: `${ada}.side`, removed: two.id });
        const again = await as(ada)('/apps/placements', { method: 'DELETE', json: { slot: `${ada}.side` } });
        expect(await json(again, 200)).toEqual({ slot: `${ada}.side`, removed: null });

        const deleted = await json(await as(ada)(`/apps/${two.id}`, { method: 'DELETE', json: {} }), 200);
        expect(deleted.clearedSlots).toEqual([`${ada}.top`]);
        expect((await json(await as(ada)('/apps/placements'), 200)).placements).toEqual([]);
      });

      it('reports each racing placement’s own eviction', async () => {
        const ada = someone();
        await reportSlots(ada, '/race', [`${ada}.hot`]);
        const racing = await Promise.all(
          ['a', 'b', 'c', 'd', 'e', 'f'].map((name) => apps.createApp(ada, { name, ...made(name) })),
        );
        const answers = await Promise.all(
          racing.map(async (app) =>
            json(
              await as(ada)('/apps/placements', {
                method: 'PUT',
                json: { slot: `${ada}.hot`, appId: app.id },
              }),
              200,
            ),
          ),
        );
        const [final] = (await json(await as(ada)('/apps/placements'), 200)).placements;
        // One chain: the first found the slot empty, every other evicted exactly the app before it.
        const evicted = answers.map((a: { evicted: string | null }) => a.evicted);
        expect(evicted.filter((id) => id === null)).toHaveLength(1);
        const ids = racing.map((app) => app.id);
        expect(
          evicted
            .filter((id) => id !== null)
            .concat(final.appId)
            .sort(),
        ).toEqual([...ids].sort());
      });

      it('refuses a slot no page reported, and keeps a declared slot as configured', async () => {
        const ada = someone();
        const app = await apps.createApp(ada, { name: 'One', ...made('one') });
        const unknown = await as(ada)('/apps/placements', {
          method: 'PUT',
          json: { slot: 'nowhere.at-all', appId: app.id },
        });
        expect(await expectError(unknown, 404, 'not_found')).toMatch(/No such slot: "nowhere.at-all"/);

        await apps.declareSlots([{ id: 'declared.banner', page: '/home', label: 'Banner' }]);
        const report = await reportSlots(ada, '/evil', ['declared.banner', `${ada}.ok`]);
        expect(report.reported).toEqual([`${ada}.ok`]);
        const slots = await json(await as(ada)('/slots'), 200);
        expect(slots.slots).toContainEqual(
          expect.objectContaining({ id: 'declared.banner', page: '/home', label: 'Banner', declared: true }),
        );
        const placed = await as(ada)('/apps/placements', {
          method: 'PUT',
          json: { slot: 'declared.banner', appId: app.id },
        });
        expect((await json(placed, 200)).evicted).toBeNull();
      });

      it('asks who is calling', async () => {
        await expectError(await as(null)('/slots'), 403, 'principal_required');
        await expectError(await as(null)('/apps'), 403, 'principal_required');
        await expectError(await as(null)('/apps/placements'), 403, 'principal_required');
      });
    });

    describe('review', () => {
      async function reviewApp(owner: string) {
        const { app } = await apps.remixFor(owner, {
          name: 'Checkout',
          kind: 'review',
          baselineKey: `Checkout-${owner}`,
          baselineHash: 'sha256:base',
          ...made(`checkout ${owner} v1`),
        });
        return app;
      }
      const rita: Caller = (path, init) => as('rita')(path, init);

      it('lets a reviewer approve the exact version, and queues the next one again', async () => {
        const ada = someone();
        const app = await reviewApp(ada);
        const queue = await json(await rita('/apps/review-queue'), 200);
        expect(queue.queue).toContainEqual(
          expect.objectContaining({
            appId: app.id,
            owner: ada,
            version: 1,
            contentHash: app.current.contentHash,
          }),
        );
        const item = await json(await rita(`/apps/review-queue/${app.id}`), 200);
        expect(item.item).toMatchObject({ appId: app.id, owner: ada, document: doc(`checkout ${ada} v1`) });

        const approve = (hash: string) =>
          rita(`/apps/review-queue/${app.id}/approve`, { method: 'POST', json: { contentHash: hash } });
        await expectError(await approve('sha256:something else'), 409, 'review_stale');
        expect(await json(await approve(app.current.contentHash), 200)).toEqual({
          appId: app.id,
          version: 1,
          status: 'approved',
          note: null,
        });
        await expectError(await approve(app.current.contentHash), 409, 'review_not_pending');
        await expectError(await rita(`/apps/review-queue/${app.id}`), 404, 'not_found');

        const read = await json(await as(ada)(`/apps/${app.id}`), 200);
        expect(read.app).toMatchObject({ servedVersion: 1, approvedHash: app.current.contentHash });
        const owned = await json(await as(ada)('/activity'), 200);
        expect(owned.events.map((e: { kind: string }) => e.kind)).toContain('app.approved');

        await apps.addVersion(ada, app.id, made(`checkout ${ada} v2`));
        const requeued = await json(await rita('/apps/review-queue'), 200);
        expect(requeued.queue).toContainEqual(expect.objectContaining({ appId: app.id, version: 2 }));
        const reject = (body: unknown) =>
          rita(`/apps/review-queue/${app.id}/reject`, { method: 'POST', json: body });
        expect(
          await expectError(
            await reject({ contentHash: `sha256:checkout ${ada} v2`, note: '  ' }),
            400,
            'validation_failed',
          ),
        ).toMatch(/body\.note/);
        expect(
          await json(
            await reject({ contentHash: `sha256:checkout ${ada} v2`, note: 'Totals are wrong' }),
            200,
          ),
        ).toEqual({ appId: app.id, version: 2, status: 'rejected', note: 'Totals are wrong' });
        const history = await json(await as(ada)(`/apps/${app.id}/history`), 200);
        expect(history.versions.map((v: { review: { status: string } }) => v.review.status)).toEqual([
          'rejected',
          'approved',
        ]);
        expect(history.versions[0].review).toMatchObject({ note: 'Totals are wrong', reviewedBy: 'rita' });
        // The approved version keeps serving.
        expect((await json(await as(ada)(`/apps/${app.id}`), 200)).app.servedVersion).toBe(1);
      });

      it('refuses everyone the composition does not name, and plain apps are not reviewable', async () => {
        const ada = someone();
        const app = await reviewApp(ada);
        expect(await expectError(await as(ada)('/apps/review-queue'), 403, 'reviewer_required')).toBe(
          'Only reviewers may review apps.',
        );
        await expectError(
          await as(ada)(`/apps/review-queue/${app.id}/approve`, {
            method: 'POST',
            json: { contentHash: app.current.contentHash },
          }),
          403,
          'reviewer_required',
        );
        const plain = await apps.createApp(ada, { name: 'Plain', ...made('plain') });
        await expectError(
          await rita(`/apps/review-queue/${plain.id}/approve`, {
            method: 'POST',
            json: { contentHash: plain.current.contentHash },
          }),
          404,
          'not_found',
        );
        await expectError(
          await rita('/apps/review-queue/not-an-id/approve', { method: 'POST', json: { contentHash: 'x' } }),
          404,
          'not_found',
        );
        // Still waiting: nothing above decided it.
        expect((await json(await rita(`/apps/review-queue/${app.id}`), 200)).item.version).toBe(1);

        const noReviewers = await testService(store);
        try {
          const message = await expectError(
            await callerFor(noReviewers.fetch, 'rita')('/apps/review-queue'),
            403,
            'reviewer_required',
          );
          expect(message).toMatch(/names no reviewers/);
        } finally {
          await noReviewers.close();
        }
      });
    });

    describe('routing and input', () => {
      it('never reads a fixed word as an app id', async () => {
        const ada = someone();
        await json(await as(ada)('/apps/placements'), 200);
        await json(await as('rita')('/apps/review-queue'), 200);
        for (const [method, path] of [
          ['DELETE', '/apps/placements/x'],
          ['DELETE', '/apps/review-queue'],
          ['GET', '/apps/seed'],
          ['GET', '/apps/import'],
          ['GET', '/apps/placements/history'],
          ['GET', '/apps/seed/export'],
          ['POST', '/apps/import/fork'],
          ['POST', '/apps/review-queue/fork'],
          ['GET', '/apps/review-queue/export/history'],
        ] as const) {
          const response = await as('rita')(path, { method, ...(method === 'GET' ? {} : { json: {} }) });
          expect(`${method} ${path} ${response.status}`).toBe(`${method} ${path} 404`);
          expect((await response.json()).error.code).toBe('route_not_found');
        }
        // The fixed words' own routes answer themselves: their validation, never an app's 404.
        await expectError(
          await as(ada)('/apps/seed', { method: 'POST', json: {} }),
          400,
          'validation_failed',
        );
        await expectError(
          await as(ada)('/apps/import', {
            method: 'POST',
            headers: { 'content-type': 'application/vnd.service.app+json' },
            body: '{}',
          }),
          400,
          'validation_failed',
        );
        const app = await apps.createApp(ada, { name: 'One', ...made('one') });
        const opened = await json(await as(ada)(`/apps/${app.id}/open`, { method: 'POST', json: {} }), 200);
        expect(opened).toMatchObject({ document: doc('one'), queries: {}, problems: [] });
        await expectError(
          await as(ada)(`/apps/${app.id}/call`, { method: 'POST', json: { tool: 'x' } }),
          403,
          'app_call_refused',
        );
        await expectError(
          await as(ada)(`/apps/${app.id}/rebase-pin`, { method: 'POST', json: {} }),
          400,
          'not_a_remix',
        );
      });

      it('refuses bad JSON, wrong types and oversized bodies with a clear 4xx', async () => {
        const ada = someone();
        const app = await apps.createApp(ada, { name: 'One', ...made('one') });
        const raw = (path: string, method: string, body: string) =>
          as(ada)(path, { method, headers: { 'content-type': 'application/json' }, body });
        await expectError(await raw('/slots', 'POST', '{"page":'), 400, 'invalid_json');
        await expectError(await raw('/apps/placements', 'PUT', '[1,2'), 400, 'invalid_json');
        const cases: Array<[string, string, unknown, RegExp]> = [
          ['/slots', 'POST', { page: '/x', slots: [] }, /body\.slots/],
          ['/slots', 'POST', { page: '/x', slots: [{ id: 'bad id', label: 'x' }] }, /body\.slots\.0\.id/],
          ['/slots', 'POST', { page: 5, slots: [{ id: 'a', label: 'x' }] }, /body\.page/],
          ['/slots', 'POST', { page: '/x', slots: [{ id: 'a', label: 'x' }], extra: 1 }, /extra/],
          [
            '/slots',
            'POST',
            { page: '/x', slots: Array.from({ length: 51 }, (_, i) => ({ id: `s${i}`, label: 'x' })) },
            /body\.slots/,
          ],
          ['/apps/placements', 'PUT', { slot: 'a' }, /body\.appId/],
          ['/apps/placements', 'PUT', { slot: ['a'], appId: app.id }, /body\.slot/],
          ['/apps/placements', 'DELETE', {}, /body\.slot/],
          [`/apps/${app.id}/fork`, 'POST', { name: 42 }, /body\.name/],
          ['/apps/placements', 'PUT', { slot: 'a\u0000b', appId: app.id }, /NUL/],
        ];
        for (const [path, method, body, message] of cases) {
          expect(
            await expectError(await as(ada)(path, { method, json: body }), 400, 'validation_failed'),
          ).toMatch(message);
        }
        await expectError(await as(ada)('/apps?limit=0'), 400, 'validation_failed');
        await expectError(await as('rita')('/apps/review-queue?limit=abc'), 400, 'validation_failed');
        await expectError(
          await as('rita')(`/apps/review-queue/${app.id}/approve`, {
            method: 'POST',
            json: { contentHash: 7 },
          }),
          400,
          'validation_failed',
        );
        const huge = { page: '/x', slots: [{ id: 'a', label: 'x'.repeat(2 * 1024 * 1024) }] };
        await expectError(await as(ada)('/slots', { method: 'POST', json: huge }), 413, 'payload_too_large');
        await expectError(
          await as(ada)('/apps/placements', {
            method: 'PUT',
            headers: { 'content-type': 'text/plain' },
            body: '{}',
          }),
          415,
          'unsupported_media_type',
        );
      });

      it('reports apps in the status, and unmounts them when switched off', async () => {
        const status = await json(await as('ada')('/status'), 200);
        expect(status.blocks.apps).toBe(true);
        const off = await testService(store, { apps: false });
        try {
          const call = callerFor(off.fetch, 'ada');
          for (const path of ['/apps', '/apps/placements', '/slots', '/apps/review-queue']) {
            await expectError(await call(path), 404, 'route_not_found');
          }
          expect((await json(await call('/status'), 200)).blocks.apps).toBe(false);
        } finally {
          await off.close();
        }
      });

      it('refuses a malformed apps option at composition', async () => {
        await expect(testService(store, { apps: { reviewer: 'rita' } as never })).rejects.toThrow(/apps/);
        await expect(
          testService(store, { apps: { openUrl: 'https://shop.example/apps' } as never }),
        ).rejects.toThrow(/openUrl/);
      });
    });
  });
}

describe('expired slot reports and stale build records', () => {
  it('are deleted when a page reports its slots, and fresh ones are kept', async () => {
    const store = await openTestStore('pglite');
    // A fresh service: its instance has not swept yet.
    const service = await testService(store);
    const http = await connect('express', service);
    try {
      const longAgo = new Date(Date.now() - 30 * 24 * 60 * 60 * 1000);
      await store.db
        .insertInto('wire_slots')
        .values({ id: 'old.slot', page: '/old', label: 'Old', declared: false, reported_at: longAgo })
        .execute();
      await store.db
        .insertInto('wire_slot_builds')
        .values({ owner: 'crashed', slot_id: 'old.slot', app_id: 'app_left', started_at: longAgo })
        .execute();
      const reported = await callerFor(http.fetch, 'reporter')('/slots', {
        method: 'POST',
        json: { page: '/fresh', slots: [{ id: 'fresh.slot', label: 'Fresh' }] },
      });
      expect(reported.status).toBe(200);
      const slotIds = async () =>
        (await store.db.selectFrom('wire_slots').select('id').execute()).map((row) => row.id).sort();
      const builds = async () =>
        (await store.db.selectFrom('wire_slot_builds').select('owner').execute()).length;
      // The sweep runs off the request's path: wait for it.
      for (let i = 0; i < 50 && ((await slotIds()).includes('old.slot') || (await builds()) > 0); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(await slotIds()).toEqual(['fresh.slot']);
      expect(await builds()).toBe(0);
    } finally {
      await http.close();
      await service.close();
      await store.dispose();
    }
  });
});
