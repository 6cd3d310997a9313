/**
 * The slot against a real wire (Express on loopback): it reports itself once per page, shows the
 * host's own content when nothing is placed or nobody is signed in, shows the placed app, and a
 * clear unplaces it. Then what each state renders, server-side.
 */
import { renderToStaticMarkup } from 'react-dom/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppsWire, startAppsWire } from '../../core/test/support/apps-wire.js';
import {
  clearSlot,
  loadSlot,
  pressInSlot,
  Remixable,
  ServiceProvider,
  ServiceSlot,
  type SlotClient,
  SlotView,
} from '../src/index.js';

const document = {
  version: 1,
  title: 'Open orders',
  root: { component: 'Heading', props: { text: 'Your orders' } },
};

/** A document whose heading reads a query of the host's `whoami` tool. */
const greeting = {
  version: 1,
  title: 'Greeting',
  queries: { me: { tool: 'whoami' } },
  root: { component: 'Heading', props: { text: { $query: 'me', path: 'name' } } },
};

/** Each person's count, which `bump` raises and `count` reads. */
const counts = new Map<string, number>();
const counter = {
  version: 1,
  title: 'Counter',
  queries: { count: { tool: 'count' } },
  root: {
    component: 'Stack',
    children: [
      { component: 'Heading', props: { text: { $query: 'count', path: 'text' } } },
      {
        component: 'Button',
        props: { label: 'Add one', action: { type: 'tool', tool: 'bump', input: { by: 1 } } },
      },
    ],
  },
};
const countTools = [
  {
    name: 'count',
    description: 'The person’s count',
    input: { type: 'object', properties: {} },
    output: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    risk: 'read' as const,
    execute: async (_input: unknown, context: { principal: { subject: string } }) => ({
      text: `Count ${counts.get(context.principal.subject) ?? 0}`,
    }),
  },
  {
    name: 'bump',
    description: 'Raises the person’s count',
    input: { type: 'object', properties: { by: { type: 'integer' } }, required: ['by'] },
    risk: 'write' as const,
    execute: async (input: { by: number }, context: { principal: { subject: string } }) => {
      counts.set(context.principal.subject, (counts.get(context.principal.subject) ?? 0) + input.by);
      return { ok: true };
    },
  },
];

/** The host's read tool: who the wire ran it as. */
const whoami = {
  name: 'whoami',
  description: 'Who is signed in',
  input: { type: 'object', properties: {} },
  output: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  risk: 'read' as const,
  execute: async (_input: unknown, context: { principal: { subject: string } }) => ({
    name: `Hello ${context.principal.subject}`,
  }),
};

describe('ServiceSlot against the wire', () => {
  let wire: AppsWire;
  let serial = 0;
  const someone = () => `slot-person-${++serial}`;
  const clientFor = (user: string | null): SlotClient & { calls: string[] } => {
    const calls: string[] = [];
    const signedIn = wire.fetchAs(user);
    return {
      baseUrl: wire.baseUrl,
      reported: new Set(),
      calls,
      fetch: (input, init) => {
        calls.push(`${init?.method ?? 'GET'} ${String(input).slice(wire.baseUrl.length)}`);
        return signedIn(input, init);
      },
    };
  };
  const placeAs = async (user: string, slot: string, appId: string) => {
    const answer = await wire.fetchAs(user)(`${wire.baseUrl}/apps/placements`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot, appId }),
    });
    expect(answer.status, await answer.clone().text()).toBe(200);
  };

  beforeAll(async () => {
    wire = await startAppsWire({ tools: [whoami, ...countTools] });
  });
  afterAll(async () => {
    await wire?.close();
  });

  it('shows the host’s content for an empty slot, and reports the slot once per page', async () => {
    const client = clientFor(someone());
    const slot = { id: 'orders.sidebar', label: 'Orders sidebar', page: '/orders' };
    expect(await loadSlot(client, slot)).toEqual({ status: 'empty' });
    expect(await loadSlot(client, slot)).toEqual({ status: 'empty' });
    expect(client.calls).toEqual([
      'POST /slots',
      'GET /apps/placements?page=%2Forders',
      'GET /apps/placements?page=%2Forders',
    ]);
    const listed = await (await wire.fetchAs('anyone')(`${wire.baseUrl}/slots?page=%2Forders`)).json();
    expect(listed.slots).toEqual([
      expect.objectContaining({ id: 'orders.sidebar', label: 'Orders sidebar' }),
    ]);
  });

  it('shows the app the person placed, and only theirs', async () => {
    const [ada, bob] = [someone(), someone()];
    const slot = { id: 'home.main', label: 'Home', page: '/home' };
    expect(await loadSlot(clientFor(ada), slot)).toEqual({ status: 'empty' });
    const appId = await wire.makeApp(ada, 'Orders', document);
    await placeAs(ada, 'home.main', appId);

    const client = clientFor(ada);
    const state = await loadSlot(client, slot);
    expect(state).toEqual({
      status: 'ready',
      app: { id: appId, name: 'Orders', kind: 'app', version: 1, document, queries: {}, problems: [] },
    });
    expect(client.calls).toContain(`POST /apps/${appId}/open`);
    expect(await loadSlot(clientFor(bob), slot)).toEqual({ status: 'empty' });
  });

  it('renders the placed app with its queries run as the person', async () => {
    const ada = someone();
    const slot = { id: 'home.greeting', label: 'Greeting', page: '/home' };
    await loadSlot(clientFor(ada), slot);
    await placeAs(ada, 'home.greeting', await wire.makeApp(ada, 'Greeting', greeting));
    const state = await loadSlot(clientFor(ada), slot);
    expect(state).toMatchObject({ status: 'ready', app: { queries: { me: { name: `Hello ${ada}` } } } });
    const html = renderToStaticMarkup(
      <SlotView id="home.greeting" state={state} onRetry={() => {}} onClear={() => {}} />,
    );
    expect(html).toContain(`>Hello ${ada}</h2>`);
  });

  it('presses a button over the wire and shows what the call changed; a call no button makes is refused', async () => {
    const ada = someone();
    const slot = { id: 'home.counter', label: 'Counter', page: '/home' };
    const client = clientFor(ada);
    await loadSlot(client, slot);
    const appId = await wire.makeApp(ada, 'Counter', counter);
    await placeAs(ada, 'home.counter', appId);
    expect(await loadSlot(client, slot)).toMatchObject({ app: { queries: { count: { text: 'Count 0' } } } });

    const next = await pressInSlot(client, slot, appId, { tool: 'bump', input: { by: 1 } });
    expect(next).toMatchObject({ status: 'ready', app: { queries: { count: { text: 'Count 1' } } } });
    expect(client.calls).toContain(`POST /apps/${appId}/call`);

    const refused = pressInSlot(client, slot, appId, { tool: 'bump', input: { by: 100 } });
    await expect(refused).rejects.toMatchObject({ status: 403, code: 'app_call_refused' });
    await expect(refused).rejects.toThrow(/no button that calls bump/);
    expect(counts.get(ada)).toBe(1);
  });

  /** A person's slot `id` showing their app, while a build of another of their apps targets it. */
  const slotBeingBuilt = async (id: string, label: string) => {
    const ada = someone();
    const slot = { id, label, page: '/home' };
    const client = clientFor(ada);
    await loadSlot(client, slot);
    const prior = await wire.makeApp(ada, 'Orders', document);
    await placeAs(ada, id, prior);
    const next = await wire.makeApp(ada, 'Greeting', greeting);
    await wire.apps.startSlotBuild(ada, id, next);
    return { ada, slot, client, prior, next };
  };

  it('says it is being built while a build targets it, keeping the app it shows, then shows the new app', async () => {
    const { ada, slot, client, prior, next } = await slotBeingBuilt('home.building', 'Building');

    const during = await loadSlot(client, slot);
    expect(during).toMatchObject({
      status: 'building',
      appId: next,
      since: expect.any(String),
      prior: { status: 'ready', app: { id: prior, document } },
    });
    const markup = renderToStaticMarkup(
      <SlotView id="home.building" state={during} onRetry={() => {}} onClear={() => {}}>
        <p>Host content</p>
      </SlotView>,
    );
    expect(markup).toMatch(/^<div class="svc-slot svc-slot-building" data-service-slot="home.building"/);
    expect(markup).toContain('aria-busy="true"');
    expect(markup).toContain('<p class="svc-slot-note" role="status">Building…</p>');
    expect(markup).toContain('>Your orders</h2>');
    expect(markup).not.toContain('Host content');
    // Only the person's own slot is being built.
    expect(await loadSlot(clientFor(someone()), slot)).toEqual({ status: 'empty' });

    // The build saved and placed its app, and ended: the slot shows it.
    await placeAs(ada, 'home.building', next);
    await wire.apps.endSlotBuild(ada, 'home.building', next);
    expect(await loadSlot(client, slot)).toMatchObject({ status: 'ready', app: { id: next } });
  });

  it('does not open the app it holds again on each poll while a build runs, only once the build ends', async () => {
    const { ada, slot, client, prior, next } = await slotBeingBuilt('home.polled', 'Polled');
    const opens = () => client.calls.filter((call) => call === `POST /apps/${prior}/open`).length;

    // The first read (or a return to the page) opens it; the polls that follow keep it.
    const first = await loadSlot(client, slot);
    expect(first).toMatchObject({ status: 'building', prior: { status: 'ready', app: { id: prior } } });
    expect(opens()).toBe(1);
    let polled = first;
    for (let poll = 0; poll < 3; poll++) {
      polled = await loadSlot(client, slot, polled.status === 'building' ? polled.prior : undefined);
      expect(polled).toMatchObject({ status: 'building', prior: { app: { id: prior, document } } });
    }
    expect(opens()).toBe(1);

    // The build ended without placing its app: the slot opens what it holds again.
    await wire.apps.endSlotBuild(ada, 'home.polled', next);
    const ended = await loadSlot(client, slot, polled.status === 'building' ? polled.prior : undefined);
    expect(ended).toMatchObject({ status: 'ready', app: { id: prior } });
    expect(opens()).toBe(2);
  });

  it('keeps the host’s content while an empty slot is built, and its prior app when the build fails', async () => {
    const ada = someone();
    const slot = { id: 'home.failing', label: 'Failing', page: '/home' };
    const client = clientFor(ada);
    await loadSlot(client, slot);
    await wire.apps.startSlotBuild(ada, 'home.failing', 'app_never');
    const empty = await loadSlot(client, slot);
    expect(empty).toMatchObject({ status: 'building', prior: { status: 'empty' } });
    const markup = renderToStaticMarkup(
      <SlotView id="home.failing" state={empty} onRetry={() => {}} onClear={() => {}}>
        <p>Host content</p>
      </SlotView>,
    );
    expect(markup).toContain('Building…</p><p>Host content</p>');
    await wire.apps.endSlotBuild(ada, 'home.failing', 'app_never');
    expect(await loadSlot(client, slot)).toEqual({ status: 'empty' });

    // A refused build into a slot with an app: the app stays.
    const prior = await wire.makeApp(ada, 'Orders', document);
    await placeAs(ada, 'home.failing', prior);
    await wire.apps.startSlotBuild(ada, 'home.failing', 'app_refused');
    expect(await loadSlot(client, slot)).toMatchObject({ status: 'building', prior: { app: { id: prior } } });
    await wire.apps.endSlotBuild(ada, 'home.failing', 'app_refused');
    expect(await loadSlot(client, slot)).toMatchObject({ status: 'ready', app: { id: prior, document } });
  });

  it('shows a review remix only once a reviewer approved it, and then the approved version', async () => {
    const ada = someone();
    const slot = { id: 'home.review', label: 'Review', page: '/home' };
    await loadSlot(clientFor(ada), slot);
    const { app } = await wire.apps.remixFor(ada, {
      name: 'Orders card',
      kind: 'review',
      baselineKey: 'OrdersCard',
      baselineHash: 'sha256:base',
      document,
      contentHash: 'sha256:review-1',
    });
    await placeAs(ada, 'home.review', app.id);
    expect(await loadSlot(clientFor(ada), slot)).toEqual({ status: 'empty' });

    await wire.apps.approve(app.id, 'sha256:review-1', 'rita');
    await wire.apps.addVersion(ada, app.id, { document: greeting, contentHash: 'sha256:review-2' });
    expect(await loadSlot(clientFor(ada), slot)).toMatchObject({
      status: 'ready',
      app: { id: app.id, version: 1, document },
    });
  });

  it('clears the slot: the app is unplaced and the host’s content comes back', async () => {
    const ada = someone();
    const slot = { id: 'home.aside', label: 'Aside', page: '/home' };
    const client = clientFor(ada);
    await loadSlot(client, slot);
    await placeAs(ada, 'home.aside', await wire.makeApp(ada, 'Stock', document));
    expect((await loadSlot(client, slot)).status).toBe('ready');

    expect(await clearSlot(client, 'home.aside')).toEqual({ status: 'empty' });
    expect(await loadSlot(client, slot)).toEqual({ status: 'empty' });
  });

  it('shows the host’s content to a visitor nobody signed in', async () => {
    const client = clientFor(null);
    expect(await loadSlot(client, { id: 'home.main', label: 'Home', page: '/home' })).toEqual({
      status: 'empty',
    });
  });

  it('fails honestly with the wire’s own words, and reports again on retry', async () => {
    const client = clientFor(someone());
    const bad = { id: '-not-a-slot', label: 'Bad', page: '/home' };
    const state = await loadSlot(client, bad);
    expect(state.status).toBe('failed');
    expect(state.status === 'failed' && state.message).toMatch(/slots|id|letter/i);
    await loadSlot(client, bad);
    expect(client.calls.filter((call) => call === 'POST /slots')).toHaveLength(2);
  });

  it('fails when the wire cannot be reached', async () => {
    const client: SlotClient = { baseUrl: 'http://127.0.0.1:9/api/service', fetch, reported: new Set() };
    expect(await loadSlot(client, { id: 'a', label: 'A', page: '/' })).toEqual({
      status: 'failed',
      message: 'The service could not be reached.',
    });
  });
});

describe('what a slot renders', () => {
  const noop = () => {};
  const render = (state: Parameters<typeof SlotView>[0]['state']) =>
    renderToStaticMarkup(
      <SlotView id="home.main" state={state} onRetry={noop} onClear={noop}>
        <p>Host content</p>
      </SlotView>,
    );

  it('renders the host’s children when empty, a busy placeholder while loading', () => {
    expect(render({ status: 'empty' })).toBe('<p>Host content</p>');
    const loading = render({ status: 'loading' });
    expect(loading).toContain('aria-busy="true"');
    expect(loading).not.toContain('Host content');
  });

  it('renders the placed app when ready', () => {
    const html = render({
      status: 'ready',
      app: { id: 'app_1', name: 'Orders', kind: 'app', version: 1, document, queries: {}, problems: [] },
    });
    expect(html).toContain('data-service-app="app_1"');
    expect(html).toContain('<h2 class="svc-heading svc-heading-1">Your orders</h2>');
    expect(html).not.toContain('Host content');
  });

  it('renders a failure as an alert with the reason, a retry and a clear', () => {
    const html = render({ status: 'failed', message: 'No <b>such</b> app.' });
    expect(html).toContain('role="alert"');
    expect(html).toContain('No &lt;b&gt;such&lt;/b&gt; app.');
    expect(html).toContain('>Try again</button>');
    expect(html).toContain('>Remove the app from this space</button>');
  });
});

describe('on the server', () => {
  it('a ServiceSlot renders its loading placeholder until the page asks the wire', () => {
    const html = renderToStaticMarkup(
      <ServiceProvider baseUrl="/api/service">
        <ServiceSlot id="orders.sidebar" page="/orders">
          <p>Host content</p>
        </ServiceSlot>
      </ServiceProvider>,
    );
    expect(html).toBe(
      '<div class="svc-slot svc-slot-loading" data-service-slot="orders.sidebar" aria-busy="true"><span class="svc-visually-hidden">Loading…</span></div>',
    );
  });

  it('Remixable renders its children marked with its id', () => {
    expect(
      renderToStaticMarkup(
        <Remixable id="OrdersCard">
          <p>Card</p>
        </Remixable>,
      ),
    ).toBe('<div class="svc-remixable" data-service-remixable="OrdersCard"><p>Card</p></div>');
  });
});
