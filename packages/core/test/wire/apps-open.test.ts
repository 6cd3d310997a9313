/**
 * Opening an app and pressing its buttons over real HTTP (a real Express server on loopback), on
 * every store kind: `POST /apps/:id/open` runs each query of the served version as the signed-in
 * person and answers the results, a query that fails is a problem in words, a review remix serves
 * only its approved version; `POST /apps/:id/call` runs only a call a button of the served
 * document makes, through the guarded path (approval, grants, the activity record); another
 * person's app is the same 404 as a missing one; bad bodies are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { GrantStore } from '../../src/agent/grants.js';
import { defineTool } from '../../src/agent/tools.js';
import { AppStore } from '../../src/wire/apps/app-store.js';
import type { Service } from '../../src/wire/create-service.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../support/stores.js';
import { jsonOf, wireErrorOf } from './support/answers.js';
import { connect, type Transport } from './support/transports.js';
import { type Caller, callerFor, testService } from './support/wire.js';

/** Who each host tool ran as, and what it did: the tools record it, the tests read it. */
const ran: string[] = [];
const notes: string[] = [];
const refunds: string[] = [];

const tools = [
  defineTool({
    name: 'list_orders',
    description: 'Lists the person’s orders',
    input: z.object({ status: z.string().optional() }),
    output: z.object({ count: z.number().int(), owner: z.string() }),
    risk: 'read',
    execute: async ({ status }, context) => {
      ran.push(`list_orders:${context.principal.subject}:${status ?? ''}`);
      return { count: context.principal.subject.length, owner: context.principal.subject };
    },
  }),
  defineTool({
    name: 'broken_stats',
    description: 'Stats that are down',
    input: z.object({}),
    risk: 'read',
    execute: async () => {
      throw new Error('the stats service is down');
    },
  }),
  defineTool({
    name: 'note_order',
    description: 'Adds a note to an order',
    input: z.object({ id: z.string(), note: z.string() }),
    risk: 'write',
    execute: async ({ id, note }, context) => {
      if (note === 'fail') throw new Error('notes are read-only today');
      notes.push(`${context.principal.subject}:${id}:${note}`);
      return { noted: id };
    },
  }),
  defineTool({
    name: 'refund_order',
    description: 'Refunds an order',
    input: z.object({ id: z.string() }),
    risk: 'destructive',
    execute: async ({ id }) => {
      refunds.push(id);
      return { refunded: id };
    },
  }),
];

function button(tool: string, input: Record<string, unknown>) {
  return { component: 'Button', props: { label: `Call ${tool}`, action: { type: 'tool', tool, input } } };
}

function ordersApp(title: string, queries: Record<string, unknown>, buttons: object[] = []) {
  return {
    version: 1,
    title,
    queries,
    root: {
      component: 'Stack',
      children: [
        { component: 'Stat', props: { label: 'Orders', value: { $query: 'orders', path: 'count' } } },
        ...buttons,
      ],
    },
  };
}

const BUTTONS = [
  button('note_order', { id: 'o1', note: { $state: 'note' } }),
  button('refund_order', { id: { $query: 'orders', path: 'owner' } }),
];
const ORDERS_QUERY = { orders: { tool: 'list_orders', input: { status: 'open' } } };

for (const kind of STORE_KINDS) {
  describe(`opening and calling apps (${kind})`, () => {
    let store: TestStore;
    let service: Service;
    let http: Transport;
    let apps: AppStore;
    let grants: GrantStore;
    let serial = 0;
    const someone = () => `person-${kind}-${++serial}`;
    const as = (user: string | null): Caller => callerFor(http.fetch, user);

    beforeAll(async () => {
      store = await openTestStore(kind);
      service = await testService(store, { tools });
      http = await connect('express', service);
      apps = new AppStore(store.db);
      grants = new GrantStore(store.db);
    });
    afterAll(async () => {
      await http?.close();
      await service?.close();
      await store?.dispose();
    });

    const json = jsonOf;
    const expectError = async (response: Response, status: number, code: string): Promise<string> =>
      (await wireErrorOf(response, status, code)).message;
    async function saved(owner: string, document: Record<string, unknown>) {
      return apps.createApp(owner, { name: 'Orders', document, contentHash: `sha256:${owner}` });
    }
    const open = (user: string, id: string, body: unknown = {}) =>
      as(user)(`/apps/${id}/open`, { method: 'POST', json: body });
    const press = (user: string, id: string, body: unknown) =>
      as(user)(`/apps/${id}/call`, { method: 'POST', json: body });

    describe('open', () => {
      it('runs each query once as the signed-in person and answers the results with the document', async () => {
        const ada = someone();
        const document = ordersApp('Open orders', ORDERS_QUERY);
        const app = await saved(ada, document);
        const opened = await json(await open(ada, app.id), 200);
        expect(opened).toEqual({
          app: expect.objectContaining({ id: app.id, name: 'Orders', kind: 'app', version: 1 }),
          serving: 'current',
          document,
          version: 1,
          contentHash: `sha256:${ada}`,
          queries: { orders: { count: ada.length, owner: ada } },
          problems: [],
        });
        expect(ran.filter((r) => r.startsWith(`list_orders:${ada}:`))).toEqual([`list_orders:${ada}:open`]);
        const activity = await json(await as(ada)('/activity'), 200);
        expect(activity.events).toEqual(
          expect.arrayContaining([
            expect.objectContaining({
              kind: 'tool.called',
              data: expect.objectContaining({
                tool: 'list_orders',
                via: 'app-open',
                appId: app.id,
                ok: true,
              }),
            }),
          ]),
        );
      });

      it('reports a query that fails as a problem in words, and still answers the others', async () => {
        const ben = someone();
        const app = await saved(
          ben,
          ordersApp('Stats', { ...ORDERS_QUERY, stats: { tool: 'broken_stats' }, gone: { tool: 'no_such' } }),
        );
        const opened = await json(await open(ben, app.id), 200);
        expect(opened.queries).toEqual({ orders: { count: ben.length, owner: ben } });
        // In the stored document's key order, which a JSON column does not keep.
        expect(opened.problems).toHaveLength(2);
        expect(opened.problems).toEqual(
          expect.arrayContaining([
            {
              path: 'queries.stats',
              message: 'query "stats" (broken_stats) failed when run: the stats service is down',
            },
            { path: 'queries.gone', message: 'query "gone" (no_such) names no host tool' },
          ]),
        );
      });

      it('serves a review remix’s approved version only, and the host’s original until then', async () => {
        const cy = someone();
        const first = ordersApp('Reviewed v1', ORDERS_QUERY);
        const { app } = await apps.remixFor(cy, {
          name: 'Orders card',
          kind: 'review',
          baselineKey: 'OrdersCard',
          baselineHash: 'sha256:base',
          document: first,
          contentHash: 'sha256:v1',
        });
        const before = ran.length;
        const waiting = await json(await open(cy, app.id), 200);
        expect(waiting).toMatchObject({
          serving: 'original',
          document: null,
          version: null,
          contentHash: null,
          queries: {},
          problems: [],
        });
        expect(ran.length).toBe(before);

        expect(await apps.approve(app.id, 'sha256:v1', 'rita')).toMatchObject({ ok: true });
        await apps.addVersion(cy, app.id, {
          document: ordersApp('Reviewed v2', ORDERS_QUERY, BUTTONS),
          contentHash: 'sha256:v2',
        });
        const approved = await json(await open(cy, app.id), 200);
        expect(approved).toMatchObject({
          serving: 'approved',
          version: 1,
          contentHash: 'sha256:v1',
          document: first,
          queries: { orders: { owner: cy } },
        });
        // A button only the unapproved version has is no button of the app yet.
        await expectError(
          await press(cy, app.id, { tool: 'note_order', input: { id: 'o1', note: 'hi' } }),
          403,
          'app_call_refused',
        );
        expect(notes.some((n) => n.startsWith(`${cy}:`))).toBe(false);
      });
    });

    describe('call', () => {
      it('runs a call a button makes, as the person, and records it on their activity', async () => {
        const dee = someone();
        const app = await saved(dee, ordersApp('Orders', ORDERS_QUERY, BUTTONS));
        const answer = await json(
          await press(dee, app.id, { tool: 'note_order', input: { id: 'o1', note: 'late' } }),
          200,
        );
        expect(answer).toEqual({ tool: 'note_order', output: { noted: 'o1' } });
        expect(notes).toContain(`${dee}:o1:late`);
        const activity = await json(await as(dee)('/activity'), 200);
        expect(activity.events).toEqual(
          expect.arrayContaining([
            expect.objectContaining({
              kind: 'tool.called',
              data: expect.objectContaining({ tool: 'note_order', via: 'app', appId: app.id, ok: true }),
            }),
          ]),
        );
      });

      it('refuses a call no button makes, and one whose fixed fields differ', async () => {
        const eve = someone();
        const app = await saved(eve, ordersApp('Orders', ORDERS_QUERY, BUTTONS));
        const refusals = [
          { tool: 'note_order', input: { id: 'o2', note: 'x' } },
          { tool: 'note_order', input: { id: 'o1', note: 'x', extra: true } },
          { tool: 'list_orders', input: {} },
          { tool: 'no_such_tool', input: {} },
        ];
        for (const body of refusals) {
          const message = await expectError(await press(eve, app.id, body), 403, 'app_call_refused');
          expect(message).toContain(body.tool);
        }
        expect(notes.some((n) => n.startsWith(`${eve}:`))).toBe(false);
      });

      it('answers approval_required for a call needing approval, and runs it once a grant covers it', async () => {
        const fay = someone();
        const app = await saved(fay, ordersApp('Orders', ORDERS_QUERY, BUTTONS));
        const call = { tool: 'refund_order', input: { id: `${fay}-order` } };
        const message = await expectError(await press(fay, app.id, call), 403, 'approval_required');
        expect(message).toMatch(/approval/);
        expect(refunds).not.toContain(`${fay}-order`);

        await grants.create(store.db, {
          owner: fay,
          tool: 'refund_order',
          scope: 'tool',
          toolInput: call.input,
          ttlSeconds: 60,
        });
        const answer = await json(await press(fay, app.id, call), 200);
        expect(answer).toEqual({ tool: 'refund_order', output: { refunded: `${fay}-order` } });
        expect(refunds).toContain(`${fay}-order`);
      });

      it('answers a tool that throws as tool_failed with its message, and bad input as validation_failed', async () => {
        const gus = someone();
        const app = await saved(gus, ordersApp('Orders', ORDERS_QUERY, BUTTONS));
        const failed = await expectError(
          await press(gus, app.id, { tool: 'note_order', input: { id: 'o1', note: 'fail' } }),
          502,
          'tool_failed',
        );
        expect(failed).toContain('notes are read-only today');
        // The bound field takes any value from the page; the tool's own schema refuses a number.
        const invalid = await expectError(
          await press(gus, app.id, { tool: 'note_order', input: { id: 'o1', note: 5 } }),
          400,
          'validation_failed',
        );
        expect(invalid).toMatch(/^body\.input/);
      });
    });

    it('answers another person’s app exactly as a missing one, on open and call', async () => {
      const [hal, ivy] = [someone(), someone()];
      const app = await saved(hal, ordersApp('Private', ORDERS_QUERY, BUTTONS));
      const before = ran.length;
      const answers = [
        await open(ivy, app.id),
        await open(ivy, 'app_missing'),
        await press(ivy, app.id, { tool: 'note_order', input: { id: 'o1', note: 'x' } }),
        await press(ivy, 'app_missing', { tool: 'note_order', input: { id: 'o1', note: 'x' } }),
      ];
      const bodies = await Promise.all(answers.map((a) => a.text()));
      expect(answers.map((a) => a.status)).toEqual([404, 404, 404, 404]);
      expect(new Set(bodies).size).toBe(1);
      expect(ran.length).toBe(before);
      expect(notes.some((n) => n.startsWith(`${ivy}:`))).toBe(false);
      await expectError(
        await as(null)(`/apps/${app.id}/open`, { method: 'POST', json: {} }),
        403,
        'principal_required',
      );
    });

    it('refuses bad bodies with a clear 400', async () => {
      const jo = someone();
      const app = await saved(jo, ordersApp('Orders', ORDERS_QUERY, BUTTONS));
      for (const body of [{ extra: 1 }, [], 'x']) {
        await expectError(await open(jo, app.id, body), 400, 'validation_failed');
      }
      for (const body of [
        {},
        { tool: '' },
        { tool: 'note_order', input: [] },
        { tool: 'note_order', other: 1 },
      ]) {
        await expectError(await press(jo, app.id, body), 400, 'validation_failed');
      }
      const notJson = await as(jo)(`/apps/${app.id}/call`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{',
      });
      await expectError(notJson, 400, 'invalid_json');
      await expectError(
        await as(jo)(`/apps/${app.id}/rebase-pin`, { method: 'POST', json: { fromVersion: 'x' } }),
        400,
        'validation_failed',
      );
    });
  });
}
