import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openTestStore, STORE_KINDS, type TestStore } from '../../../test/support/stores.js';
import { AuditLog } from '../../agent/audit.js';
import { GrantStore } from '../../agent/grants.js';
import {
  type AnyHostTool,
  createToolRegistry,
  defineTool,
  type Grant,
  type ToolContext,
  type ToolDataPart,
  type ToolRegistry,
} from '../../agent/tools.js';
import { APP_DOCUMENT_LIMITS } from '../../apps/index.js';
import { buildMenu } from '../../door/tool-menu.js';
import { silentLogger } from '../../http/logger.js';
import { appToolCatalog } from './app-checks.js';
import { checkSeeds } from './app-seeds.js';
import { AppStore } from './app-store.js';
import { APP_DATA_PART, type AppPart, appTools, type MakeReceipt } from './app-tools.js';

const ORDERS = [
  { id: 'o1', total_cents: 1250, customer: { name: 'Ada' } },
  { id: 'o2', total_cents: 990, customer: { name: 'Bo' } },
];

function hostTools(refunds: string[]): AnyHostTool[] {
  return [
    defineTool({
      name: 'list_orders',
      description: 'Lists orders',
      input: z.object({ status: z.string().optional() }),
      output: z.object({
        count: z.number().int(),
        items: z.array(
          z.object({
            id: z.string(),
            total_cents: z.number().int(),
            customer: z.object({ name: z.string() }),
          }),
        ),
      }),
      risk: 'read',
      execute: async () => ({ count: ORDERS.length, items: ORDERS }),
    }),
    // Its schema promises a `total` it never returns: only the run check can tell.
    defineTool({
      name: 'revenue',
      description: 'Revenue',
      input: z.object({}),
      output: z.object({ total: z.number().optional(), currency: z.string() }),
      risk: 'read',
      execute: async () => ({ currency: 'USD' }),
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
}

function ordersApp(title = 'Open orders', extra: object[] = []) {
  return {
    version: 1,
    title,
    queries: { orders: { tool: 'list_orders', input: { status: 'open' } } },
    root: {
      component: 'Stack',
      children: [
        { component: 'Stat', props: { label: 'Open', value: { $query: 'orders', path: 'count' } } },
        {
          component: 'Table',
          props: {
            rows: { $query: 'orders', path: 'items' },
            columns: [
              { field: 'id', label: 'Order' },
              { field: 'customer.name', label: 'Customer' },
            ],
          },
        },
        {
          component: 'Button',
          props: {
            label: 'Refund the first',
            action: {
              type: 'tool',
              tool: 'refund_order',
              input: { id: { $query: 'orders', path: 'items[0].id' } },
            },
          },
        },
        ...extra,
      ],
    },
  };
}

for (const kind of STORE_KINDS) {
  describe(`apps tools (${kind})`, () => {
    let store: TestStore;
    let apps: AppStore;
    let registry: ToolRegistry;
    let grants: GrantStore;
    const refunds: string[] = [];
    let serial = 0;
    const someone = () => `user-${++serial}`;

    beforeAll(async () => {
      store = await openTestStore(kind);
      apps = new AppStore(store.db);
      grants = new GrantStore(store.db);
      const host = hostTools(refunds);
      registry = createToolRegistry(host, {
        service: appTools({
          store: apps,
          hostTools: createToolRegistry(host),
          calls: { grants, audit: new AuditLog(store.db, silentLogger) },
          productName: 'Shop',
          appUrl: (id) => `https://shop.test/apps/${id}`,
        }),
      });
      await apps.declareSlots([
        { id: 'home.top', page: '/home', label: 'Top of home' },
        { id: 'orders.side', page: '/orders', label: 'Orders sidebar' },
      ]);
    });
    afterAll(async () => store?.dispose());

    /** Calls a tool as `subject` the way the turn does: input parsed by its schema, then executed. */
    async function call<T>(
      name: string,
      input: unknown,
      subject: string,
      extra: Partial<ToolContext> = {},
    ): Promise<{ output: T; parts: ToolDataPart[] }> {
      const tool = registry.get(name);
      if (!tool) throw new Error(`no tool ${name}`);
      const parsed = tool.parseInput(input);
      if (!parsed.ok) throw new Error(parsed.message);
      const parts: ToolDataPart[] = [];
      const output = (await tool.execute(parsed.value, {
        principal: { subject },
        via: 'agent',
        signal: new AbortController().signal,
        writeData: async (part) => {
          parts.push(part);
        },
        ...extra,
      })) as T;
      return { output, parts };
    }
    const make = (input: object, subject: string) => call<MakeReceipt>('service_make', input, subject);

    it('builds an app: a receipt of words, the saved app, the wish, and one part repainted to final', async () => {
      const alice = someone();
      const { output, parts } = await make({ wish: 'show my open orders', document: ordersApp() }, alice);
      expect(Object.keys(output).sort()).toEqual(['app', 'note', 'status', 'where']);
      expect(output).toMatchObject({ status: 'built', app: 'Open orders', where: 'your apps' });
      expect(output.note).toMatch(/^saved as version 1 of app_/);
      for (const value of Object.values(output)) expect(typeof value).toBe('string');
      expect(JSON.stringify(output)).not.toContain('component');

      const [listed] = await apps.listApps(alice);
      expect(listed).toMatchObject({ name: 'Open orders', version: 1 });
      expect(output.note).toContain(listed!.id);
      expect((await apps.trail(alice, listed!.id))?.map((w) => w.wish)).toEqual(['show my open orders']);

      expect(parts.every((p) => p.type === APP_DATA_PART && p.id === listed!.id)).toBe(true);
      const states = parts.map((p) => (p.data as AppPart).state);
      expect(states).toEqual(['streaming', 'streaming', 'final']);
      expect((parts[0]!.data as { document: unknown }).document).toBeNull();
      expect(parts.at(-1)!.data).toMatchObject({
        state: 'final',
        version: 1,
        document: { title: 'Open orders' },
      });
    });

    it('edits an app into a second version under the same part id, with the wish appended', async () => {
      const alice = someone();
      const built = await make({ wish: 'orders', document: ordersApp() }, alice);
      const [app] = await apps.listApps(alice);
      const edited = await make(
        {
          wish: 'add a heading',
          appId: app!.id,
          document: ordersApp('Open orders', [{ component: 'Heading', props: { text: 'Mine' } }]),
        },
        alice,
      );
      expect(built.output.status).toBe('built');
      expect(edited.output).toMatchObject({ status: 'edited', app: 'Open orders' });
      expect(edited.output.note).toBe(`saved as version 2 of ${app!.id}`);
      expect((await apps.history(alice, app!.id))?.map((v) => v.version)).toEqual([2, 1]);
      expect((await apps.trail(alice, app!.id))?.map((w) => w.wish)).toEqual(['orders', 'add a heading']);
      expect(edited.parts.every((p) => p.id === app!.id)).toBe(true);
      expect(edited.parts.at(-1)!.data).toMatchObject({ state: 'final', version: 2 });
    });

    it('refuses a binding the host tool does not declare: nothing saved, the slot keeps its app', async () => {
      const alice = someone();
      await make({ wish: 'orders', document: ordersApp(), slot: 'home.top' }, alice);
      const before = await apps.placements(alice);
      expect(before).toHaveLength(1);
      const bad = ordersApp('Totals', [
        { component: 'Stat', props: { label: 'Total', value: { $query: 'orders', path: 'total' } } },
      ]);
      const { output, parts } = await make({ wish: 'totals', document: bad, slot: 'home.top' }, alice);
      expect(output).toMatchObject({ status: 'failed', app: 'Totals', where: 'Top of home on /home' });
      expect(output.note).toContain('refused, nothing saved');
      expect(output.note).toContain('"total"');
      expect(await apps.listApps(alice)).toHaveLength(1);
      expect(await apps.placements(alice)).toEqual(before);
      const last = parts.at(-1)!.data as AppPart;
      expect(last.state).toBe('failed');
      expect(last).not.toHaveProperty('document');
      expect(parts.every((p) => (p.data as { document?: unknown }).document == null)).toBe(true);
    });

    it('refuses a document the real run contradicts, after painting it as streaming, and saves nothing', async () => {
      const alice = someone();
      const document = {
        version: 1,
        title: 'Revenue',
        queries: { revenue: { tool: 'revenue' } },
        root: { component: 'Stat', props: { label: 'Revenue', value: { $query: 'revenue', path: 'total' } } },
      };
      const { output, parts } = await make({ wish: 'revenue', document }, alice);
      expect(output.status).toBe('failed');
      expect(output.note).toContain('returned no "total"');
      expect(parts.map((p) => (p.data as AppPart).state)).toEqual(['streaming', 'streaming', 'failed']);
      expect(await apps.listApps(alice)).toHaveLength(0);
    });

    it('refuses an unknown slot before saving, naming the slots there are', async () => {
      const alice = someone();
      const { output } = await make({ wish: 'orders', document: ordersApp(), slot: 'nowhere' }, alice);
      expect(output.status).toBe('failed');
      expect(output.note).toContain('home.top');
      expect(await apps.listApps(alice)).toHaveLength(0);
    });

    it('keeps each person to their own apps', async () => {
      const [alice, bob] = [someone(), someone()];
      await make({ wish: 'orders', document: ordersApp() }, alice);
      const [app] = await apps.listApps(alice);
      const edit = await make({ wish: 'mine now', appId: app!.id, document: ordersApp('Hijack') }, bob);
      expect(edit.output.status).toBe('failed');
      expect(edit.parts).toEqual([]);
      expect((await apps.getApp(alice, app!.id))?.version).toBe(1);
      await expect(call('service_apps_open', { appId: app!.id }, bob)).rejects.toThrow(/No app/);
      await expect(call('service_apps_pin', { appId: app!.id, slot: 'home.top' }, bob)).rejects.toThrow(
        /No app/,
      );
      await expect(
        call('service_apps_call', { appId: app!.id, tool: 'refund_order', input: { id: 'o1' } }, bob),
      ).rejects.toThrow(/No app/);
      expect((await call<{ apps: unknown[] }>('service_apps_list', {}, bob)).output.apps).toEqual([]);
    });

    it('pins, lists and unpins', async () => {
      const alice = someone();
      await make({ wish: 'a', document: ordersApp('A') }, alice);
      await make({ wish: 'b', document: ordersApp('B') }, alice);
      const [b, a] = await apps.listApps(alice);
      const first = await call('service_apps_pin', { appId: a!.id, slot: 'orders.side' }, alice);
      expect(first.output).toMatchObject({ placed: a!.id, slot: 'orders.side', replaced: null });
      const second = await call('service_apps_pin', { appId: b!.id, slot: 'orders.side' }, alice);
      expect(second.output).toMatchObject({ placed: b!.id, replaced: a!.id });
      await expect(call('service_apps_pin', { appId: a!.id, slot: 'made.up' }, alice)).rejects.toThrow(
        /no slot "made.up".*home\.top/,
      );

      const listed = await call<{ apps: Array<{ id: string; slots: string[] }> }>(
        'service_apps_list',
        {},
        alice,
      );
      expect(listed.output.apps).toEqual([
        { id: b!.id, name: 'B', kind: 'app', version: 1, slots: ['orders.side'] },
        { id: a!.id, name: 'A', kind: 'app', version: 1, slots: [] },
      ]);
      const slots = await call<{ slots: Array<{ id: string; app: string | null }> }>(
        'service_apps_slots',
        {},
        alice,
      );
      expect(slots.output.slots).toContainEqual({
        id: 'orders.side',
        page: '/orders',
        label: 'Orders sidebar',
        app: b!.id,
      });

      const unpinned = await call('service_apps_unpin', { slot: 'orders.side' }, alice);
      expect(unpinned.output).toEqual({ slot: 'orders.side', removed: b!.id });
      expect(await apps.placements(alice)).toEqual([]);
    });

    it('opens an app with its document and trail, and paints it; over the door it answers the card', async () => {
      const alice = someone();
      await make({ wish: 'orders please', document: ordersApp() }, alice);
      const [app] = await apps.listApps(alice);
      const opened = await call<{ document: unknown; wishes: string[] }>(
        'service_apps_open',
        { appId: app!.id },
        alice,
      );
      expect(opened.output).toMatchObject({ id: app!.id, version: 1, wishes: ['orders please'] });
      expect(opened.output.document).toMatchObject({ title: 'Open orders' });
      expect(opened.parts).toEqual([
        expect.objectContaining({
          type: APP_DATA_PART,
          id: app!.id,
          data: expect.objectContaining({ state: 'final' }),
        }),
      ]);
      const door = await call('service_apps_open', { appId: app!.id }, alice, { via: 'door' });
      expect(door.output).toEqual({
        card: {
          type: 'service.app-open',
          version: 1,
          product: 'Shop',
          app: 'Open orders',
          url: `https://shop.test/apps/${app!.id}`,
        },
        text: `Open Open orders in Shop: https://shop.test/apps/${app!.id}`,
      });
    });

    it('calls a button’s tool only when the app has that button, and asks for the tool’s approval', async () => {
      const alice = someone();
      await make({ wish: 'orders', document: ordersApp() }, alice);
      const [app] = await apps.listApps(alice);
      const callTool = registry.get('service_apps_call')!;
      const context = {
        principal: { subject: alice },
        via: 'agent' as const,
        signal: new AbortController().signal,
      };
      expect(
        await callTool.needsApproval({ appId: app!.id, tool: 'refund_order', input: { id: 'o1' } }, context),
      ).toBe(true);
      const pressed = await call(
        'service_apps_call',
        { appId: app!.id, tool: 'refund_order', input: { id: 'o2' } },
        alice,
      );
      expect(pressed.output).toEqual({ refunded: 'o2' });
      expect(refunds).toContain('o2');
      await expect(
        call(
          'service_apps_call',
          { appId: app!.id, tool: 'refund_order', input: { id: 'o1', extra: 1 } },
          alice,
        ),
      ).rejects.toThrow(/no button/);
      await expect(
        call('service_apps_call', { appId: app!.id, tool: 'list_orders', input: {} }, alice),
      ).rejects.toThrow(/no button/);
      // A grant on the apps tool itself does not stand for the button's destructive tool.
      const grant = { id: 'grt_x', tool: 'service_apps_call' } as Grant;
      await expect(
        call('service_apps_call', { appId: app!.id, tool: 'refund_order', input: { id: 'o1' } }, alice, {
          grant,
        }),
      ).rejects.toThrow(/approval/);
      expect(refunds).not.toContain('o1');
    });

    it('updates a drifted remix through the replay engine: a receipt of words, all or nothing', async () => {
      const host = createToolRegistry(hostTools(refunds));
      const seeds = checkSeeds(
        [{ component: 'OrdersCard', name: 'Orders card', document: ordersApp('Orders card') }],
        appToolCatalog(host),
      );
      const seen: string[] = [];
      const withSeeds = createToolRegistry([], {
        service: appTools({
          store: apps,
          hostTools: host,
          calls: { grants, audit: new AuditLog(store.db, silentLogger) },
          seeds,
          // Each wish adds a heading of its words; `fail` throws.
          replay: async ({ document, wish }) => {
            seen.push(wish);
            if (wish === 'fail') throw new Error('no can do');
            const root = document.root as { children?: unknown[] };
            const children = [...(root.children ?? []), { component: 'Heading', props: { text: wish } }];
            return { ...document, root: { ...root, children } };
          },
        }),
      });
      const rebaseTool = withSeeds.get('service_apps_rebase_pin')!;
      expect(Object.keys((rebaseTool.inputSchema as { properties: object }).properties).sort()).toEqual([
        'appId',
        'fromVersion',
      ]);
      const rebase = async (input: object, subject: string) => {
        const parsed = rebaseTool.parseInput(input);
        if (!parsed.ok) throw new Error(parsed.message);
        return (await rebaseTool.execute(parsed.value, {
          principal: { subject },
          via: 'agent',
          signal: new AbortController().signal,
        })) as MakeReceipt;
      };
      const remix = async (owner: string, wishes: string[]) => {
        const { app } = await apps.remixFor(owner, {
          name: 'Orders card',
          kind: 'remix',
          baselineKey: 'OrdersCard',
          baselineHash: 'sha256:an-older-seed',
          document: ordersApp('Mine'),
          contentHash: 'sha256:mine',
        });
        for (const wish of wishes) {
          await apps.addVersion(owner, app.id, {
            document: ordersApp('Mine'),
            contentHash: 'sha256:m',
            wish,
          });
        }
        return app.id;
      };

      const alice = someone();
      const id = await remix(alice, ['Sales', 'Today']);
      const done = await rebase({ appId: id }, alice);
      expect(Object.keys(done).sort()).toEqual(['app', 'note', 'status', 'where']);
      expect(done).toEqual({
        status: 'edited',
        app: 'Orders card',
        where: 'your apps',
        note: `rebased as version 4 of ${id}, 2 wishes replayed`,
      });
      expect(seen).toEqual(['Sales', 'Today']);
      const rebased = await apps.getApp(alice, id);
      expect(rebased).toMatchObject({ version: 4, baselineHash: seeds.get('OrdersCard')!.hash });
      expect(JSON.stringify(rebased!.current.document)).toContain('"title":"Orders card"');
      expect((await apps.trail(alice, id))?.map((w) => w.wish)).toEqual(['Sales', 'Today']);
      expect(await rebase({ appId: id }, alice)).toMatchObject({
        status: 'failed',
        note: 'the remix is already on the current baseline',
      });

      const bob = someone();
      const broken = await remix(bob, ['Sales', 'fail', 'Today']);
      seen.length = 0;
      const refused = await rebase({ appId: broken, fromVersion: 4 }, bob);
      expect(refused.status).toBe('failed');
      expect(refused.note).toMatch(
        /^replayed 1, failed 1, remaining 1: the wish "fail" could not be replayed/,
      );
      expect(refused.note).toMatch(/nothing was saved$/);
      expect(seen).toEqual(['Sales', 'fail']);
      expect(await apps.getApp(bob, broken)).toMatchObject({
        version: 4,
        baselineHash: 'sha256:an-older-seed',
      });
      expect(await rebase({ appId: broken, fromVersion: 3 }, bob)).toMatchObject({
        status: 'failed',
        note: expect.stringMatching(/changed since that version/),
      });
      // Another person's remix answers as a missing one.
      expect((await rebase({ appId: broken }, alice)).note).toBe(
        `no app ${broken} among the person’s apps (service_apps_list)`,
      );
    });

    it('creates a new app with service_apps_create: a receipt naming its id, one part to final', async () => {
      const alice = someone();
      const { output, parts } = await call<MakeReceipt>(
        'service_apps_create',
        { document: ordersApp('Created'), wish: 'a new one' },
        alice,
      );
      expect(output).toMatchObject({ status: 'built', app: 'Created', where: 'your apps' });
      const [app] = await apps.listApps(alice);
      expect(app).toMatchObject({ name: 'Created', version: 1 });
      expect(output.note).toBe(`saved as version 1 of ${app!.id}`);
      expect(parts.at(-1)).toMatchObject({ id: app!.id, data: { state: 'final', version: 1 } });
      // An app id in its input is not among its fields: it always makes a new app.
      expect(
        registry.get('service_apps_create')!.parseInput({ document: ordersApp(), appId: app!.id }),
      ).toEqual({ ok: true, value: { document: ordersApp() } });
    });

    it('edits with service_apps_edit: appId and wish required; another person’s app reads as missing', async () => {
      const [alice, bob] = [someone(), someone()];
      await make({ wish: 'orders', document: ordersApp() }, alice);
      const [app] = await apps.listApps(alice);
      const edit = registry.get('service_apps_edit')!;
      expect(edit.parseInput({ document: ordersApp(), wish: 'x' }).ok).toBe(false);
      expect(edit.parseInput({ appId: app!.id, document: ordersApp() }).ok).toBe(false);
      const edited = await call<MakeReceipt>(
        'service_apps_edit',
        { appId: app!.id, wish: 'rename it', document: ordersApp('Renamed') },
        alice,
      );
      expect(edited.output).toMatchObject({ status: 'edited', note: `saved as version 2 of ${app!.id}` });
      expect((await apps.getApp(alice, app!.id))?.current.document).toMatchObject({ title: 'Renamed' });
      const hijack = await call<MakeReceipt>(
        'service_apps_edit',
        { appId: app!.id, wish: 'mine', document: ordersApp('Hijack') },
        bob,
      );
      const missing = await call<MakeReceipt>(
        'service_apps_edit',
        { appId: 'app_nope', wish: 'mine', document: ordersApp('Hijack') },
        bob,
      );
      expect(hijack.output.status).toBe('failed');
      expect(hijack.output.note.replace(app!.id, 'ID')).toBe(missing.output.note.replace('app_nope', 'ID'));
      expect(hijack.parts).toEqual([]);
      expect((await apps.getApp(alice, app!.id))?.version).toBe(2);
    });

    it('lists the Kit’s 13 components with JSON Schema props, and the host’s read tools, with service_apps_kit', async () => {
      const { output } = await call<{
        components: Array<{ name: string; props: { type?: string; properties?: object } }>;
        tools: Array<{ name: string; query: boolean; output: unknown }>;
      }>('service_apps_kit', {}, someone());
      expect(output.components).toHaveLength(13);
      expect(output.components.map((c) => c.name)).toEqual(
        expect.arrayContaining(['Stack', 'Table', 'Button']),
      );
      for (const component of output.components) expect(component.props.type).toBe('object');
      const table = output.components.find((c) => c.name === 'Table')!;
      expect(Object.keys(table.props.properties ?? {})).toEqual(expect.arrayContaining(['rows', 'columns']));
      expect(output.tools.filter((t) => t.query).map((t) => t.name)).toEqual(['list_orders', 'revenue']);
      expect(output.tools.find((t) => t.name === 'refund_order')).toMatchObject({ query: false });
      expect(output.tools.find((t) => t.name === 'list_orders')!.output).toMatchObject({ type: 'object' });
      // Only the host's tools: the service's own never back a query.
      expect(output.tools.some((t) => t.name.startsWith('service_'))).toBe(false);
    });

    it('answers a press on another person’s app exactly as on a missing one while approval is pending', async () => {
      const [alice, bob] = [someone(), someone()];
      await make({ wish: 'orders', document: ordersApp() }, alice);
      const [app] = await apps.listApps(alice);
      const pressTool = registry.get('service_apps_call')!;
      const context = {
        principal: { subject: bob },
        via: 'agent' as const,
        signal: new AbortController().signal,
      };
      const press = (appId: string) => ({ appId, tool: 'refund_order', input: { id: 'o1' } });
      // Both ask for the approval the button's tool asks for, whether or not the app exists.
      expect(await pressTool.needsApproval(press(app!.id), context)).toBe(true);
      expect(await pressTool.needsApproval(press('app_missing'), context)).toBe(true);
      const answer = async (appId: string) =>
        (await call('service_apps_call', press(appId), bob).catch((error: Error) => error.message)) as string;
      const [theirs, missing] = [await answer(app!.id), await answer('app_missing')];
      expect(theirs.replace(app!.id, 'ID')).toBe(missing.replace('app_missing', 'ID'));
      expect(refunds).not.toContain('o1');
    });

    it('a refused edit paints the app’s last good version again, not a failure', async () => {
      const alice = someone();
      await make({ wish: 'orders', document: ordersApp() }, alice);
      const [app] = await apps.listApps(alice);
      const bad = ordersApp('Broken', [
        { component: 'Stat', props: { label: 'Total', value: { $query: 'orders', path: 'total' } } },
      ]);
      const { output, parts } = await make({ wish: 'totals', appId: app!.id, document: bad }, alice);
      expect(output).toMatchObject({ status: 'failed', app: 'Open orders' });
      expect(output.note).toContain('refused, nothing saved');
      expect(parts.every((p) => p.id === app!.id)).toBe(true);
      expect(parts.map((p) => (p.data as AppPart).state)).toEqual(['streaming', 'final']);
      expect(parts.at(-1)!.data).toEqual({
        state: 'final',
        appId: app!.id,
        title: 'Open orders',
        version: 1,
        document: ordersApp(),
      });
      expect((await apps.getApp(alice, app!.id))?.version).toBe(1);
    });

    it('paints the tree as the model writes it, under the id the build saves, at a bounded rate', async () => {
      const alice = someone();
      const stream = registry.get('service_make')!.inputStream!;
      const parts: ToolDataPart[] = [];
      const context: ToolContext = {
        principal: { subject: alice },
        via: 'agent',
        signal: new AbortController().signal,
        runId: 'run_preview',
        toolCallId: 'call_preview',
        writeData: async (part) => {
          parts.push(part);
        },
      };
      const input = { wish: 'orders', document: ordersApp() };
      const text = JSON.stringify(input);
      await stream.start!(context);
      let deltas = 0;
      for (let end = 20; end < text.length + 20; end += 20) {
        await stream.delta!(text.slice(0, end), context);
        deltas++;
        // Most deltas come sooner than the paint interval; every fourth one waits it out.
        if (deltas % 4 === 0) await new Promise((resolve) => setTimeout(resolve, 90));
      }
      const receipt = (await registry.get('service_make')!.execute(input, context)) as MakeReceipt;
      const [app] = await apps.listApps(alice);
      expect(receipt.note).toBe(`saved as version 1 of ${app!.id}`);
      expect(parts.every((p) => p.type === APP_DATA_PART && p.id === app!.id)).toBe(true);
      const previews = parts.slice(0, -2).map((p) => p.data as Extract<AppPart, { state: 'streaming' }>);
      expect(previews.length).toBeGreaterThanOrEqual(2);
      expect(previews.length).toBeLessThan(deltas / 2);
      expect(previews.every((p) => p.state === 'streaming')).toBe(true);
      // The tree grows: some preview holds part of it, and none holds anything but Kit nodes.
      const sizes = previews.map((p) => JSON.stringify(p.document ?? {}).length);
      expect(sizes).toEqual([...sizes].sort((a, b) => a - b));
      expect(previews.some((p) => p.document !== null && sizes.at(-1)! > 0)).toBe(true);
      for (const preview of previews) {
        if (preview.document) expect(preview.document).not.toHaveProperty('queries');
      }
      expect(parts.at(-1)!.data).toMatchObject({ state: 'final', version: 1 });
    });

    it('reads at most twice the largest document of an input for previews', () => {
      for (const name of ['service_make', 'service_apps_create', 'service_apps_edit']) {
        expect(registry.get(name)!.inputStream!.maxText).toBe(2 * APP_DOCUMENT_LIMITS.maxBytes);
      }
    });

    it('never previews an edit of another person’s app, and ends an unread input’s preview', async () => {
      const [alice, bob] = [someone(), someone()];
      await make({ wish: 'orders', document: ordersApp() }, alice);
      const [app] = await apps.listApps(alice);
      const stream = registry.get('service_apps_edit')!.inputStream!;
      const parts: ToolDataPart[] = [];
      const contextOf = (subject: string, toolCallId: string): ToolContext => ({
        principal: { subject },
        via: 'agent',
        signal: new AbortController().signal,
        runId: 'run_x',
        toolCallId,
        writeData: async (part) => {
          parts.push(part);
        },
      });
      const text = JSON.stringify({ appId: app!.id, wish: 'x', document: ordersApp('Theirs') });
      const bobs = contextOf(bob, 'call_bob');
      await stream.start!(bobs);
      await stream.delta!(text.slice(0, text.length - 10), bobs);
      await new Promise((resolve) => setTimeout(resolve, 50));
      await stream.end!(bobs);
      expect(parts).toEqual([]);
      // Alice's own edit previews, and an input that never became a call shows her app again.
      const alices = contextOf(alice, 'call_alice');
      await stream.start!(alices);
      await stream.delta!(text.slice(0, text.length - 10), alices);
      await new Promise((resolve) => setTimeout(resolve, 50));
      await stream.end!(alices);
      expect(parts.map((p) => (p.data as AppPart).state)).toEqual(['streaming', 'final']);
      expect(parts.at(-1)!.data).toMatchObject({ version: 1, document: { title: 'Open orders' } });
    });

    it('registers every apps tool with its risk, and the door never curates them away', () => {
      const risks = Object.fromEntries(
        registry
          .all()
          .filter((t) => t.name.startsWith('service_'))
          .map((t) => [t.name, t.risk]),
      );
      expect(risks).toMatchObject({
        service_make: 'write',
        service_apps_create: 'write',
        service_apps_edit: 'write',
        service_apps_rebase_pin: 'write',
        service_apps_list: 'read',
        service_apps_open: 'read',
        service_apps_call: null,
        service_apps_pin: 'write',
        service_apps_unpin: 'write',
        service_apps_slots: 'read',
      });
      const menu = buildMenu(registry, { surfaces: { mcp: ['list_orders'] } }, silentLogger);
      const names = menu.tools.map((t) => t.name);
      expect(names).toContain('list_orders');
      expect(names).not.toContain('refund_order');
      expect(names).toEqual(expect.arrayContaining(Object.keys(risks)));
    });

    it('refuses a host tool named service_*', () => {
      expect(() =>
        createToolRegistry([
          { name: 'service_make', description: 'x', input: z.object({}), execute: () => 1 },
        ]),
      ).toThrow(/reserved/);
    });
  });
}
