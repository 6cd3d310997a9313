/**
 * The apps routes that bring apps in, over real HTTP (a real Express server on loopback), on
 * every store kind: `POST /apps/import` (a round trip from an export, the field allowlist, the
 * size cap, a document the validator refuses, remix provenance and two imports of one remix
 * converging), `POST /apps/seed` (a person's remix of a component the host seeds, placed in a
 * slot), slots the composition declares, and the adoption of an anonymous visitor's apps and
 * placements when they sign in, with and without clashes.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contentHash } from '../../src/apps/index.js';
import { AppStore } from '../../src/wire/apps/app-store.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { jsonOf, wireErrorOf } from './support/answers.js';
import { connect, type Transport } from './support/transports.js';
import { testService } from './support/wire.js';

const tools = [
  {
    name: 'list_orders',
    description: 'Lists orders',
    input: z.object({}),
    risk: 'read' as const,
    execute: () => ({ count: 2, items: [] }),
  },
  {
    name: 'refund_order',
    description: 'Refunds an order',
    input: z.object({ id: z.string() }),
    risk: 'destructive' as const,
    execute: () => ({ ok: true }),
  },
];

const ordersDoc = (title: string) => ({
  version: 1 as const,
  title,
  queries: { orders: { tool: 'list_orders', input: {} } },
  state: {},
  root: {
    component: 'Stack',
    props: { gap: 8 },
    children: [{ component: 'Stat', props: { label: 'Open', value: { $query: 'orders', path: 'count' } } }],
  },
});
const made = (title: string, wish?: string) => {
  const document = ordersDoc(title);
  return { document, contentHash: contentHash(document), ...(wish ? { wish } : {}) };
};

/** The export file docs/wire.md shows under "Export": it must import as written. */
function docsExportFile(): string {
  const page = readFileSync(new URL('../../../../docs/wire.md', import.meta.url), 'utf8');
  const section = page.slice(page.indexOf('### Export'), page.indexOf('### Import'));
  return section.match(/```json\n([\s\S]*?)```/)![1]!;
}

const MEDIA_TYPE = 'application/vnd.service.app+json';
const SEEDS = [
  { component: 'OrdersCard', name: 'Orders card', document: ordersDoc('Orders card') },
  { component: 'RevenueCard', name: 'Revenue', document: ordersDoc('Revenue'), review: true },
];
const DECLARED = [
  { id: 'orders.sidebar', page: '/orders', label: 'Orders sidebar' },
  { id: 'home.main', page: '/', label: 'Home' },
];

for (const kind of STORE_KINDS) {
  describe(`apps import, seed, declared slots and adoption (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    let http: Transport;
    let apps: AppStore;
    let serial = 0;
    const someone = () => `importer-${++serial}`;

    /** A request over HTTP as `user` (or nobody), with an optional anonymous cookie. */
    function as(user: string | null, cookie?: string) {
      return (path: string, init: RequestInit & { json?: unknown } = {}) => {
        const headers = new Headers(init.headers);
        if (user) headers.set('x-test-user', user);
        if (cookie) headers.set('cookie', `service_anon=${cookie}`);
        let body = init.body;
        if (init.json !== undefined) {
          headers.set('content-type', 'application/json');
          body = JSON.stringify(init.json);
        }
        const { json: _json, ...rest } = init;
        return http.fetch(
          new Request(`http://host.test/api/service${path}`, { ...rest, headers, body: body ?? null }),
        );
      };
    }
    const importAs = (user: string | null, body: string, cookie?: string, type = MEDIA_TYPE) =>
      as(user, cookie)('/apps/import', { method: 'POST', headers: { 'content-type': type }, body });

    const json = jsonOf;
    const expectError = wireErrorOf;

    beforeAll(async () => {
      store = await openTestStore(kind);
      service = await testService(store, {
        tools,
        anonymous: true,
        apps: { slots: DECLARED, seeds: SEEDS, reviewer: (user) => user.subject === 'rita' },
      });
      http = await connect('express', service);
      apps = new AppStore(store.db);
    });
    afterAll(async () => {
      await http?.close();
      await service?.close();
      await store?.dispose();
    });

    describe('import', () => {
      it('imports an export as a fresh app of the importer, remembering where it came from', async () => {
        const [ada, bob] = [someone(), someone()];
        const sales = await apps.createApp(ada, { name: 'Sales', ...made('Sales v1', 'show my sales') });
        const exported = await as(ada)(`/apps/${sales.id}/export`);
        expect(exported.headers.get('content-type')).toBe(MEDIA_TYPE);
        const file = await exported.text();

        for (const [type, user] of [
          [MEDIA_TYPE, bob],
          ['application/json', ada],
        ] as const) {
          const answer = await json(await importAs(user, file, undefined, type), 201);
          expect(answer.created).toBe(true);
          expect(answer.app).toMatchObject({
            name: 'Sales',
            kind: 'app',
            forkedFrom: sales.id,
            version: 1,
            current: { version: 1, contentHash: sales.current.contentHash, document: sales.current.document },
          });
          expect(answer.app.id).toMatch(/^app_/);
          expect(answer.app.id).not.toBe(sales.id);
          expect(answer.app).not.toHaveProperty('owner');
          // The importer owns it: it is in their list, and the trail (the exporter's words) stayed behind.
          const listed = await json(await as(user)('/apps'), 200);
          expect(listed.apps.map((a: { id: string }) => a.id)).toContain(answer.app.id);
          expect(await apps.trail(user, answer.app.id)).toEqual([]);
        }
        // The exporter's own app is untouched, and not the importer's.
        await expectError(await as(bob)(`/apps/${sales.id}`), 404, 'not_found');
        const activity = await json(await as(bob)('/activity'), 200);
        expect(activity.events.map((e: { kind: string }) => e.kind)).toContain('app.imported');
      });

      it('imports the export file the docs show, as written, and exports it again alike', async () => {
        const ada = someone();
        const text = docsExportFile();
        const shown = JSON.parse(text);
        const answer = await json(await importAs(ada, text), 201);
        expect(answer.app).toMatchObject({
          name: shown.name,
          kind: shown.kind,
          forkedFrom: shown.source.appId,
          baselineKey: shown.baseline.key,
          current: { document: shown.document, contentHash: shown.contentHash },
        });
        const again = await json(await as(ada)(`/apps/${answer.app.id}/export`), 200);
        expect(Object.keys(again)).toEqual(Object.keys(shown));
        expect(again.document).toEqual(shown.document);
        expect(again.contentHash).toBe(shown.contentHash);
      });

      it('recomputes the content hash instead of trusting the file’s', async () => {
        const ada = someone();
        const document = ordersDoc('Hand written');
        const file = {
          format: 'service-app',
          formatVersion: 1,
          name: 'Mine',
          document,
          contentHash: 'forged',
        };
        const answer = await json(await importAs(ada, JSON.stringify(file)), 201);
        expect(answer.app.current.contentHash).toBe(contentHash(document));
        expect(answer.app).toMatchObject({ kind: 'app', forkedFrom: null, baselineKey: null });
      });

      it('keeps a remix’s provenance, and two imports of one remix converge on one app', async () => {
        const [ada, bob] = [someone(), someone()];
        const { app: remix } = await apps.remixFor(ada, {
          name: 'Orders card (mine)',
          kind: 'remix',
          baselineKey: 'OrdersCard',
          baselineHash: 'baseline-1',
          ...made('Orders remix'),
        });
        const file = await (await as(ada)(`/apps/${remix.id}/export`)).text();

        const first = await json(await importAs(bob, file), 201);
        expect(first).toMatchObject({
          created: true,
          app: { kind: 'remix', baselineKey: 'OrdersCard', baselineHash: 'baseline-1', forkedFrom: remix.id },
        });
        // Racing and repeated imports of the same remix: one app, the first one, unchanged.
        const again = await Promise.all([importAs(bob, file), importAs(bob, file)]);
        for (const answer of again) {
          const body = await json(answer, 200);
          expect(body).toMatchObject({ created: false, app: { id: first.app.id, version: 1 } });
        }
        const listed = await json(await as(bob)('/apps'), 200);
        expect(
          listed.apps.filter((a: { baselineKey: string }) => a.baselineKey === 'OrdersCard'),
        ).toHaveLength(1);
      });

      it('imports a review-kind remix into the review queue', async () => {
        const bob = someone();
        const file = {
          format: 'service-app',
          formatVersion: 1,
          name: 'Reviewed',
          kind: 'review',
          document: ordersDoc('Reviewed'),
          baseline: { key: 'ReviewedCard', hash: 'h1' },
        };
        const answer = await json(await importAs(bob, JSON.stringify(file)), 201);
        expect(answer.app).toMatchObject({ kind: 'review', servedVersion: null });
        expect(answer.app.current.review).toMatchObject({ status: 'pending' });
        const queue = await json(await as('rita')('/apps/review-queue'), 200);
        expect(queue.queue.map((item: { appId: string }) => item.appId)).toContain(answer.app.id);
      });

      it('refuses bad JSON, an oversize body, unknown fields and a malformed file', async () => {
        const ada = someone();
        const good = { format: 'service-app', formatVersion: 1, name: 'Fine', document: ordersDoc('Fine') };
        await expectError(await importAs(ada, '{"format":'), 400, 'invalid_json');
        const huge = JSON.stringify({ ...good, name: 'x'.repeat(300 * 1024) });
        const tooLarge = await expectError(await importAs(ada, huge), 413, 'payload_too_large');
        expect(tooLarge.message).toContain(String(192 * 1024));
        for (const [file, field] of [
          [{ ...good, owner: 'someone-else' }, 'owner'],
          [{ ...good, trail: ['my words'] }, 'trail'],
          [{ ...good, baseline: { key: 'OrdersCard', hash: 'h', extra: 1 } }, 'extra'],
        ] as const) {
          const error = await expectError(
            await importAs(ada, JSON.stringify(file)),
            400,
            'validation_failed',
          );
          expect(error.message).toContain(field);
        }
        for (const [file, field] of [
          [{ ...good, format: 'other' }, 'format'],
          [{ ...good, formatVersion: 2 }, 'formatVersion'],
          [{ ...good, document: undefined }, 'document'],
          [{ ...good, kind: 'remix' }, 'baseline'],
          [{ ...good, source: { appId: 'not-an-app', version: 1 } }, 'source.appId'],
        ] as const) {
          const error = await expectError(
            await importAs(ada, JSON.stringify(file)),
            400,
            'validation_failed',
          );
          expect(error.message).toContain(field);
        }
        // A form post cannot reach it (the JSON gate), and nothing was written by any refusal.
        await expectError(
          await importAs(ada, JSON.stringify(good), undefined, 'text/plain'),
          415,
          'unsupported_media_type',
        );
        expect(await json(await as(ada)('/apps'), 200)).toEqual({ apps: [] });
      });

      it('takes a file nesting 65 levels, a document’s 64 inside the file, and refuses one level more', async () => {
        const ada = someone();
        // `levels` of arrays inside the document's own object: the document nests `levels + 1`.
        const fileNesting = (levels: number) =>
          JSON.stringify({
            format: 'service-app',
            formatVersion: 1,
            name: 'Deep',
            document: { ...ordersDoc('Deep'), deep: JSON.parse('['.repeat(levels) + ']'.repeat(levels)) },
          });
        // At the edge the guard lets it through and the document validator judges it (`deep` is
        // not a document field), not the body's nesting.
        const judged = await expectError(await importAs(ada, fileNesting(63)), 422, 'app_invalid');
        expect(JSON.stringify(judged.problems)).not.toContain('nests deeper');
        const tooDeep = await expectError(await importAs(ada, fileNesting(64)), 400, 'validation_failed');
        expect(tooDeep.message).toContain('nests deeper than 65 levels');
        expect(await json(await as(ada)('/apps'), 200)).toEqual({ apps: [] });
      });

      it('refuses a document the validator refuses, with its problems, and writes nothing', async () => {
        const ada = someone();
        const document = {
          ...ordersDoc('Bad'),
          queries: { refunds: { tool: 'refund_order', input: {} } },
          root: { component: 'Gauge', props: {} },
        };
        const file = { format: 'service-app', formatVersion: 1, name: 'Bad', document };
        const error = await expectError(await importAs(ada, JSON.stringify(file)), 422, 'app_invalid');
        expect(error.problems).toEqual(
          expect.arrayContaining([
            { path: 'queries.refunds.tool', message: expect.stringContaining('not a read tool') },
            { path: 'root.component', message: expect.stringContaining('unknown component "Gauge"') },
          ]),
        );
        const shape = await expectError(
          await importAs(ada, JSON.stringify({ ...file, document: { version: 2 } })),
          422,
          'app_invalid',
        );
        expect(shape.problems.length).toBeGreaterThan(0);
        const { version: _version, ...unversioned } = ordersDoc('No version');
        const missing = await expectError(
          await importAs(ada, JSON.stringify({ ...file, document: unversioned })),
          422,
          'app_invalid',
        );
        expect(missing.problems).toEqual([{ path: 'version', message: 'version is missing; it must be 1' }]);
        expect(await json(await as(ada)('/apps'), 200)).toEqual({ apps: [] });
      });
    });

    describe('seed', () => {
      it('makes the person’s remix of a seeded component once, and places it', async () => {
        const ada = someone();
        const first = await json(
          await as(ada)('/apps/seed', { method: 'POST', json: { component: 'OrdersCard' } }),
          201,
        );
        const hash = contentHash(ordersDoc('Orders card'));
        expect(first).toMatchObject({
          created: true,
          app: {
            name: 'Orders card',
            kind: 'remix',
            baselineKey: 'OrdersCard',
            baselineHash: hash,
            version: 1,
            current: { contentHash: hash, document: ordersDoc('Orders card') },
          },
        });
        expect(first).not.toHaveProperty('placed');

        const again = await json(
          await as(ada)('/apps/seed', {
            method: 'POST',
            json: { component: 'OrdersCard', slot: 'orders.sidebar' },
          }),
          200,
        );
        expect(again).toMatchObject({
          created: false,
          app: { id: first.app.id },
          placed: { slot: 'orders.sidebar', appId: first.app.id, evicted: null },
        });
        const placements = await json(await as(ada)('/apps/placements'), 200);
        expect(placements.placements).toEqual([
          { slot: 'orders.sidebar', appId: first.app.id, placedAt: expect.any(String) },
        ]);

        const review = await json(
          await as(ada)('/apps/seed', { method: 'POST', json: { component: 'RevenueCard' } }),
          201,
        );
        expect(review.app).toMatchObject({ kind: 'review', servedVersion: null });
      });

      it('refuses a component the host does not seed and a slot nobody lists, writing nothing', async () => {
        const ada = someone();
        const missing = await expectError(
          await as(ada)('/apps/seed', { method: 'POST', json: { component: 'Nope' } }),
          404,
          'not_found',
        );
        expect(missing.message).toContain('OrdersCard, RevenueCard');
        const slot = await expectError(
          await as(ada)('/apps/seed', { method: 'POST', json: { component: 'OrdersCard', slot: 'no.such' } }),
          404,
          'not_found',
        );
        expect(slot.message).toContain('No such slot');
        await expectError(
          await as(ada)('/apps/seed', { method: 'POST', json: { component: 'OrdersCard', extra: true } }),
          400,
          'validation_failed',
        );
        expect(await json(await as(ada)('/apps'), 200)).toEqual({ apps: [] });
      });

      it('refuses a composition whose seed document fails the checks', async () => {
        const bad = { ...ordersDoc('Bad'), queries: { orders: { tool: 'no_such_tool' } } };
        await expect(
          testService(store, { tools, apps: { seeds: [{ component: 'Bad', name: 'Bad', document: bad }] } }),
        ).rejects.toThrow(/apps\.seeds\[0\] \(Bad\)\.document is refused: queries\.orders\.tool/);
        await expect(
          testService(store, { tools, apps: { slots: [{ id: '-bad', page: '/', label: 'x' }] } }),
        ).rejects.toThrow(/apps\.slots\.0\.id/);
      });
    });

    describe('declared slots', () => {
      it('lists the configured slots from startup; pages cannot move them', async () => {
        const ada = someone();
        const slots = await json(await as(ada)('/slots'), 200);
        expect(slots.slots).toEqual(
          expect.arrayContaining(DECLARED.map((slot) => ({ ...slot, declared: true, reportedAt: null }))),
        );
        const report = await json(
          await as(ada)('/slots', {
            method: 'POST',
            json: { page: '/elsewhere', slots: [{ id: 'home.main', label: 'Moved' }] },
          }),
          200,
        );
        expect(report.reported).toEqual([]);
        const home = await json(await as(ada)('/slots?page=/'), 200);
        expect(home.slots).toEqual([
          { id: 'home.main', page: '/', label: 'Home', declared: true, reportedAt: null },
        ]);
      });
    });

    describe('anonymous adoption', () => {
      /** A visitor who seeded OrdersCard into `orders.sidebar` and imported a plain app into `home.main`. */
      async function visitor() {
        const first = await as(null)('/apps/seed', {
          method: 'POST',
          json: { component: 'OrdersCard', slot: 'orders.sidebar' },
        });
        const cookie = first.headers
          .getSetCookie()
          .find((h) => h.startsWith('service_anon='))!
          .slice('service_anon='.length)
          .split(';')[0]!;
        const remix = (await json(first, 201)).app;
        const file = {
          format: 'service-app',
          formatVersion: 1,
          name: 'Visitor app',
          document: ordersDoc('Visitor'),
        };
        const plain = (await json(await importAs(null, JSON.stringify(file), cookie), 201)).app;
        await json(
          await as(null, cookie)('/apps/placements', {
            method: 'PUT',
            json: { slot: 'home.main', appId: plain.id },
          }),
          200,
        );
        await apps.appendWish(`${await anonymousOwner(remix.id)}`, remix.id, 'make it blue');
        return { cookie, remix, plain };
      }
      async function anonymousOwner(appId: string): Promise<string> {
        const row = await store.db
          .selectFrom('wire_apps')
          .select('owner')
          .where('id', '=', appId)
          .executeTakeFirstOrThrow();
        return row.owner;
      }

      it('moves the visitor’s apps, versions, trail and placements to the user', async () => {
        const { cookie, remix, plain } = await visitor();
        const ada = someone();
        const signedIn = await json(await as(ada, cookie)('/apps'), 200);
        expect(signedIn.apps.map((a: { id: string }) => a.id).sort()).toEqual([remix.id, plain.id].sort());
        expect((await apps.trail(ada, remix.id))?.map((w) => w.wish)).toEqual(['make it blue']);
        expect(await apps.history(ada, plain.id)).toHaveLength(1);
        const placements = await json(await as(ada)('/apps/placements'), 200);
        expect(placements.placements.map((p: { slot: string; appId: string }) => [p.slot, p.appId])).toEqual([
          ['home.main', plain.id],
          ['orders.sidebar', remix.id],
        ]);
        // The cookie is retired: a visitor with it again starts empty.
        expect(await json(await as(null, cookie)('/apps'), 200)).toEqual({ apps: [] });
        const activity = await json(await as(ada)('/activity'), 200);
        const adopted = activity.events.find((e: { kind: string }) => e.kind === 'session.adopted');
        expect(adopted?.data).toMatchObject({
          apps: 2,
          placements: 2,
          droppedApps: [],
          droppedSlots: [],
        });
      });

      it('keeps the user’s remix and placement on a clash, dropping the visitor’s', async () => {
        const ada = someone();
        const own = await json(
          await as(ada)('/apps/seed', {
            method: 'POST',
            json: { component: 'OrdersCard', slot: 'orders.sidebar' },
          }),
          201,
        );
        const other = await apps.createApp(ada, { name: 'Mine', ...made('Mine') });
        await json(
          await as(ada)('/apps/placements', { method: 'PUT', json: { slot: 'home.main', appId: other.id } }),
          200,
        );

        const { cookie, remix, plain } = await visitor();
        const signedIn = await json(await as(ada, cookie)('/apps'), 200);
        const ids = signedIn.apps.map((a: { id: string }) => a.id).sort();
        expect(ids).toEqual([own.app.id, other.id, plain.id].sort());
        expect(ids).not.toContain(remix.id);
        const placements = await json(await as(ada)('/apps/placements'), 200);
        expect(placements.placements.map((p: { slot: string; appId: string }) => [p.slot, p.appId])).toEqual([
          ['home.main', other.id],
          ['orders.sidebar', own.app.id],
        ]);
        // The visitor's remix is gone with its versions and trail.
        const left = await store.db
          .selectFrom('wire_app_versions')
          .select('app_id')
          .where('app_id', '=', remix.id)
          .execute();
        expect(left).toEqual([]);
        const activity = await json(await as(ada)('/activity'), 200);
        const adopted = activity.events.find((e: { kind: string }) => e.kind === 'session.adopted');
        expect(adopted?.data).toMatchObject({
          apps: 1,
          placements: 0,
          droppedApps: [remix.id],
          droppedSlots: ['home.main'],
        });
      });
    });
  });
}
