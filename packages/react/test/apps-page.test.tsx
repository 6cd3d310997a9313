/**
 * `<AppsPage>` against a real wire (Express on loopback): the person's apps listed, one opened
 * with its served version and history, deleted, forked, exported and imported again, and an
 * import the wire refuses shown with its problems. Then what the page renders, server-side.
 */
import { renderToStaticMarkup } from 'react-dom/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppsWire, startAppsWire } from '../../core/test/support/apps-wire.js';
import {
  type AppSummary,
  AppsPageView,
  type AppsPageViewProps,
  deleteAppNamed,
  exportApp,
  forkAppNamed,
  importAppFile,
  loadAppsList,
  openAppDetail,
} from '../src/index.js';
import type { WireClient } from '../src/wire.js';

const ordersDocument = {
  version: 1,
  title: 'Open orders',
  root: { component: 'Heading', props: { text: 'Your orders' } },
};
const stockDocument = {
  version: 1,
  title: 'Stock',
  root: { component: 'Heading', props: { text: 'Stock left' } },
};

describe('the apps page against the wire', () => {
  let wire: AppsWire;
  let serial = 0;
  const someone = () => `apps-page-person-${++serial}`;
  const clientFor = (user: string | null): WireClient => ({
    baseUrl: wire.baseUrl,
    fetch: wire.fetchAs(user),
  });

  beforeAll(async () => {
    wire = await startAppsWire();
  });
  afterAll(async () => {
    await wire?.close();
  });

  it('lists only the person’s apps', async () => {
    const [ada, bob] = [someone(), someone()];
    const orders = await wire.makeApp(ada, 'Orders', ordersDocument);
    const stock = await wire.makeApp(ada, 'Stock', stockDocument);
    await wire.makeApp(bob, 'Bob’s', ordersDocument);
    const list = await loadAppsList(clientFor(ada));
    if (list.status !== 'ready') throw new Error(`expected the list, got ${list.status}`);
    expect(list.apps.map((app) => app.id).sort()).toEqual([orders, stock].sort());
    expect(list.apps.find((app) => app.id === orders)).toMatchObject({
      name: 'Orders',
      kind: 'app',
      version: 1,
      drifted: false,
    });
    const html = render({ list, opened: null, outcome: null });
    expect(html).toContain('>Orders</h3>');
    expect(html).toContain('>Stock</h3>');
    expect(html).not.toContain('Bob’s');
  });

  it('says why when nobody is signed in', async () => {
    const list = await loadAppsList(clientFor(null));
    expect(list.status).toBe('failed');
    expect(render({ list, opened: null, outcome: null })).toContain('Your apps could not be listed:');
  });

  it('opens an app: the version it serves and its history', async () => {
    const ada = someone();
    const id = await wire.makeApp(ada, 'Orders', ordersDocument);
    await wire.apps.addVersion(ada, id, { document: stockDocument, contentHash: 'sha256:orders-2' });
    const opened = await openAppDetail(clientFor(ada), id);
    expect(opened).toMatchObject({
      status: 'ready',
      app: { id, version: 2 },
      served: { version: 2, document: stockDocument },
    });
    if (opened.status !== 'ready') throw new Error('expected the app');
    expect(opened.history.map((version) => version.version).sort()).toEqual([1, 2]);
    const html = render({ list: { status: 'ready', apps: [] }, opened, outcome: null });
    expect(html).toContain('>Stock left</h2>');
    expect(html).toContain('Version 2 (showing)');
    expect(html).toContain('Version 1');
    expect(await openAppDetail(clientFor(someone()), id)).toEqual({
      status: 'failed',
      id,
      message: 'No such app.',
    });
  });

  it('deletes an app', async () => {
    const ada = someone();
    const id = await wire.makeApp(ada, 'Orders', ordersDocument);
    expect(await deleteAppNamed(clientFor(ada), { id, name: 'Orders' })).toEqual({
      ok: true,
      message: 'Deleted Orders.',
    });
    expect(await loadAppsList(clientFor(ada))).toEqual({ status: 'ready', apps: [] });
    expect(await deleteAppNamed(clientFor(ada), { id, name: 'Orders' })).toEqual({
      ok: false,
      message: 'Orders could not be deleted: No such app.',
    });
  });

  it('forks an app into a new one of the person’s', async () => {
    const ada = someone();
    const id = await wire.makeApp(ada, 'Orders', ordersDocument);
    const forked = await forkAppNamed(clientFor(ada), { id, name: 'Orders' });
    expect(forked).toMatchObject({ ok: true, appId: expect.stringMatching(/^app_/) });
    expect(forked.appId).not.toBe(id);
    const list = await loadAppsList(clientFor(ada));
    expect(list.status === 'ready' && list.apps.find((app) => app.id === forked.appId)).toMatchObject({
      forkedFrom: id,
    });
  });

  it('exports an app and imports the file as a new app', async () => {
    const ada = someone();
    const id = await wire.makeApp(ada, 'Orders', ordersDocument);
    const file = await exportApp(clientFor(ada), id);
    expect(file.fileName).toBe(`${id}.service-app.json`);
    expect(JSON.parse(file.text)).toMatchObject({ name: 'Orders', document: ordersDocument });
    const bob = someone();
    const imported = await importAppFile(clientFor(bob), file.text);
    expect(imported).toMatchObject({ ok: true, message: 'Imported Orders.' });
    const opened = await openAppDetail(clientFor(bob), imported.appId!);
    expect(opened).toMatchObject({ status: 'ready', served: { document: ordersDocument } });
  });

  it('shows the wire’s problems when it refuses an import', async () => {
    const ada = someone();
    const file = JSON.parse(
      await (await exportApp(clientFor(ada), await wire.makeApp(ada, 'Orders', ordersDocument))).text,
    );
    file.document = { ...ordersDocument, root: { component: 'Marquee', props: { text: '<b>hi</b>' } } };
    const refused = await importAppFile(clientFor(ada), JSON.stringify(file));
    expect(refused.ok).toBe(false);
    expect(refused.message).toMatch(/^The file could not be imported: The app's document is refused/);
    expect(refused.problems?.[0]).toMatchObject({
      path: expect.stringContaining('root'),
      message: expect.stringMatching(/Marquee/),
    });
    const html = render({ list: { status: 'ready', apps: [] }, opened: null, outcome: refused });
    expect(html).toContain('role="status"');
    expect(html).toContain('<code>root');
    expect(html).toContain('Marquee');

    const notJson = await importAppFile(clientFor(ada), 'not json at all');
    expect(notJson).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^The file could not be imported: /),
    });
    expect(await loadAppsList(clientFor(ada))).toMatchObject({
      apps: [expect.objectContaining({ name: 'Orders' })],
    });
  });
});

function render(props: AppsPageViewProps) {
  return renderToStaticMarkup(<AppsPageView {...props} />);
}

describe('what the apps page renders', () => {
  const app: AppSummary = {
    id: 'app_1',
    name: 'Orders <card>',
    kind: 'remix',
    baselineKey: 'OrdersCard',
    baselineHash: 'sha256:a',
    forkedFrom: null,
    version: 3,
    servedVersion: 3,
    approvedHash: null,
    createdAt: '2030-01-01T00:00:00.000Z',
    updatedAt: '2030-01-05T14:03:00.000Z',
    drifted: true,
  };

  it('lists each app with its kind, version, when it changed and a drifted badge, and its buttons', () => {
    const html = render({
      list: { status: 'ready', apps: [app, { ...app, id: 'app_2', drifted: false }] },
      opened: null,
      outcome: null,
    });
    expect(html).toContain('<h2 class="svc-heading svc-heading-1">Your apps</h2>');
    expect(html).toContain('>Orders &lt;card&gt;</h3>');
    expect(html).toContain(
      'Remix · version 3 · updated <time dateTime="2030-01-05T14:03:00.000Z">2030-01-05 14:03 UTC</time>',
    );
    expect(html.match(/Component changed/g)).toHaveLength(1);
    for (const label of ['Open', 'Fork', 'Export', 'Delete']) {
      expect(html).toContain(`aria-label="${label} Orders &lt;card&gt;">${label}</button>`);
    }
    expect(html).toContain('<input type="file" accept=".json,application/json"/>');
  });

  it('says so when there are no apps, and while loading', () => {
    expect(render({ list: { status: 'ready', apps: [] }, opened: null, outcome: null })).toContain(
      'You have no apps yet.',
    );
    expect(render({ list: { status: 'loading' }, opened: null, outcome: null })).toContain(
      'aria-busy="true"',
    );
  });

  it('an opened review remix with nothing approved says it waits for review', () => {
    const html = render({
      list: { status: 'ready', apps: [] },
      opened: {
        status: 'ready',
        app: {
          ...app,
          kind: 'review',
          current: {
            version: 1,
            contentHash: 'h',
            review: { status: 'pending' as const, note: null, reviewedBy: null, reviewedAt: null },
            createdAt: app.createdAt,
            document: { version: 1, title: 'x', root: { component: 'Text', props: { text: 'x' } } },
          },
        },
        history: [
          {
            version: 2,
            contentHash: 'h2',
            review: { status: 'pending' as const, note: null, reviewedBy: null, reviewedAt: null },
            createdAt: app.createdAt,
          },
          {
            version: 1,
            contentHash: 'h',
            review: {
              status: 'rejected',
              note: 'Too loud',
              reviewedBy: 'user:rev',
              reviewedAt: app.createdAt,
            },
            createdAt: app.createdAt,
          },
        ],
        served: null,
      },
      outcome: null,
    });
    expect(html).toContain('waiting for a reviewer');
    // Each version's review in words, from the wire's review object.
    expect(html).toContain('pending · ');
    expect(html).toContain('rejected: Too loud · ');
    expect(html).not.toContain('[object Object]');
  });
});
