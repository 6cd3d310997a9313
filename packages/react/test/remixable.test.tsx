/**
 * `<Remixable>` against a real wire (Express on loopback, with seeds): no remix shows the host's
 * children with a Remix control, Remix shows the seeded remix, Revert deletes it and the children
 * come back, a review remix waits for review, and a refusing wire or no provider leaves the host's
 * children alone. A remix drifts for real: a second wire on the same store is the host's next
 * deploy, with the component's seed changed and a scripted replay of the remix's wishes.
 */
import { renderToStaticMarkup } from 'react-dom/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppReplayer } from '../../core/src/wire/options.js';
import { type AppsWire, startAppsWire } from '../../core/test/support/apps-wire.js';
import {
  loadRemix,
  Remixable,
  RemixableView,
  type RemixState,
  remixComponent,
  revertRemix,
  ServiceProvider,
  updateRemix,
} from '../src/index.js';
import type { WireClient } from '../src/wire.js';

const seedDocument = {
  version: 1,
  title: 'Orders card',
  root: { component: 'Heading', props: { text: 'Remixed orders' } },
};
const reviewDocument = {
  version: 1,
  title: 'Stock card',
  root: { component: 'Heading', props: { text: 'Remixed stock' } },
};
/** The host's next deploy changed the OrdersCard seed: remixes of the first one drift. */
const changedDocument = {
  version: 1,
  title: 'Orders card',
  root: { component: 'Heading', props: { text: 'Orders, redesigned' } },
};
/** The wish the scripted replay cannot apply. */
const FAILING_WISH = 'make the <b>heading</b> red';

/** The scripted replay of a remix's wishes: `title: X` retitles; the failing wish throws. */
const replay: AppReplayer = async ({ document, wish }) => {
  if (wish.startsWith('title: ')) return { ...document, title: wish.slice('title: '.length) };
  if (wish === FAILING_WISH) throw new Error('no red headings here');
  throw new Error(`unscripted wish ${wish}`);
};

const host = <p>Host card</p>;

function html(state: RemixState, extra: Partial<Parameters<typeof RemixableView>[0]> = {}) {
  return renderToStaticMarkup(
    <RemixableView id="OrdersCard" state={state} {...extra}>
      {host}
    </RemixableView>,
  );
}

describe('Remixable against the wire', () => {
  let wire: AppsWire;
  /** The same store, composed with the changed OrdersCard seed. */
  let redeployed: AppsWire;
  let serial = 0;
  const someone = () => `remix-person-${++serial}`;
  const clientFor = (user: string | null, on: AppsWire = wire): WireClient & { calls: string[] } => {
    const calls: string[] = [];
    const signedIn = on.fetchAs(user);
    return {
      baseUrl: on.baseUrl,
      calls,
      fetch: (input, init) => {
        calls.push(`${init?.method ?? 'GET'} ${String(input).slice(on.baseUrl.length)}`);
        return signedIn(input, init);
      },
    };
  };
  const historyOf = async (user: string, id: string) =>
    (await (await wire.fetchAs(user)(`${wire.baseUrl}/apps/${id}/history`)).json()).versions as {
      version: number;
    }[];

  beforeAll(async () => {
    wire = await startAppsWire({
      apps: {
        seeds: [
          { component: 'OrdersCard', name: 'Orders card', document: seedDocument },
          { component: 'StockCard', name: 'Stock card', document: reviewDocument, review: true },
        ],
      },
    });
    redeployed = await wire.recompose({
      apps: {
        seeds: [{ component: 'OrdersCard', name: 'Orders card', document: changedDocument }],
        replay,
      },
    });
  });
  afterAll(async () => {
    await redeployed?.close();
    await wire?.close();
  });

  it('shows the host’s children and a Remix control with no remix; Remix shows the seeded remix', async () => {
    const user = someone();
    const client = clientFor(user);
    const none = await loadRemix(client, 'OrdersCard');
    expect(none).toEqual({ status: 'original' });
    // Only this component's remix is asked for, never the person's whole list.
    expect(client.calls).toEqual(['GET /apps?component=OrdersCard']);
    const before = html(none);
    expect(before).toContain('<p>Host card</p>');
    expect(before).toContain('>Remix</button>');

    const remixed = await remixComponent(client, 'OrdersCard');
    expect(remixed).toMatchObject({
      status: 'remixed',
      remix: { kind: 'remix', baselineKey: 'OrdersCard', drifted: false },
      app: { version: 1, document: seedDocument },
    });
    expect(client.calls).toContain('POST /apps/seed');
    const after = html(remixed);
    expect(after).toContain('>Remixed orders</h2>');
    expect(after).not.toContain('Host card');
    expect(after).toContain('>Revert</button>');
    expect(after).not.toContain('>Update</button>');
    // Loaded again, the page finds the same remix.
    expect(await loadRemix(clientFor(user), 'OrdersCard')).toMatchObject({ status: 'remixed' });
    expect(await loadRemix(clientFor(someone()), 'OrdersCard')).toEqual({ status: 'original' });
  });

  it('says whether pressing Remix made the remix or found the one the person already had', async () => {
    const user = someone();
    const first = await remixComponent(clientFor(user), 'OrdersCard');
    expect(first).toMatchObject({ status: 'remixed', created: true });
    // Another tab pressed Remix first: the wire answers that remix, not a new one.
    const again = await remixComponent(clientFor(user), 'OrdersCard');
    expect(again).toMatchObject({ status: 'remixed', created: false });
    if (first.status !== 'remixed' || again.status !== 'remixed') throw new Error('expected remixes');
    expect(again.remix.id).toBe(first.remix.id);
  });

  it('reverts: the remix is deleted and the host’s children show again', async () => {
    const client = clientFor(someone());
    const remixed = await remixComponent(client, 'OrdersCard');
    if (remixed.status !== 'remixed') throw new Error(`expected a remix, got ${remixed.status}`);
    const reverted = await revertRemix(client, remixed);
    expect(reverted).toEqual({ status: 'original' });
    expect(client.calls).toContain(`DELETE /apps/${remixed.remix.id}`);
    expect(await loadRemix(client, 'OrdersCard')).toEqual({ status: 'original' });
    expect(html(reverted)).toContain('<p>Host card</p>');
  });

  it('a review remix shows the host’s children with a waiting note until approved', async () => {
    const client = clientFor(someone());
    const pending = await remixComponent(client, 'StockCard');
    expect(pending).toMatchObject({ status: 'pending', remix: { kind: 'review', baselineKey: 'StockCard' } });
    const markup = html(pending);
    expect(markup).toContain('<p>Host card</p>');
    expect(markup).toContain('waiting for review');
    expect(markup).toContain('>Revert</button>');
  });

  it('a drifted remix offers Update, which shows the new version', async () => {
    const user = someone();
    const first = await remixComponent(clientFor(user), 'OrdersCard');
    expect(first).toMatchObject({ status: 'remixed', remix: { drifted: false } });
    expect(html(first)).not.toContain('changed since you remixed it');

    // The host deployed a changed seed of the component: the same remix now drifted.
    const client = clientFor(user, redeployed);
    const drifted = await loadRemix(client, 'OrdersCard');
    expect(drifted).toMatchObject({ status: 'remixed', remix: { drifted: true, version: 1 } });
    const notice = html(drifted);
    expect(notice).toContain('This component changed since you remixed it.');
    expect(notice).toContain('>Update</button>');
    expect(notice).toContain('>Remixed orders</h2>');
    if (drifted.status !== 'remixed') throw new Error('expected a remix');

    const updated = await updateRemix(client, drifted);
    expect(client.calls).toContain(`POST /apps/${drifted.remix.id}/rebase-pin`);
    expect(updated).toMatchObject({
      status: 'remixed',
      remix: { id: drifted.remix.id, version: 2, drifted: false },
      app: { version: 2, document: changedDocument },
      note: { kind: 'updated', version: 2, replayed: 0 },
    });
    const after = html(updated);
    expect(after).toContain('>Orders, redesigned</h2>');
    expect(after).toContain('Updated to version 2: 0 changes replayed.');
    expect(after).not.toContain('>Update</button>');
    // Loaded again, the page finds the updated remix, no longer drifted.
    expect(await loadRemix(clientFor(user, redeployed), 'OrdersCard')).toMatchObject({
      status: 'remixed',
      remix: { version: 2, drifted: false },
      app: { document: changedDocument },
    });
    expect((await historyOf(user, drifted.remix.id)).map((v) => v.version)).toEqual([2, 1]);
  });

  it('a failed update says what replayed and which wish failed, and changes nothing', async () => {
    const user = someone();
    const remixed = await remixComponent(clientFor(user), 'OrdersCard');
    if (remixed.status !== 'remixed') throw new Error('expected a remix');
    // The remix's trail: the wishes the person asked for, the second of which will not replay.
    for (const wish of ['title: Mine', FAILING_WISH, 'title: Never asked']) {
      expect(await wire.apps.appendWish(user, remixed.remix.id, wish)).not.toBeNull();
    }
    const client = clientFor(user, redeployed);
    const drifted = await loadRemix(client, 'OrdersCard');
    if (drifted.status !== 'remixed') throw new Error('expected a remix');
    expect(drifted.remix.drifted).toBe(true);

    const failed = await updateRemix(client, drifted);
    expect(failed).toEqual({
      ...drifted,
      note: {
        kind: 'update-failed',
        replayed: 1,
        failed: 1,
        remaining: 1,
        wish: FAILING_WISH,
        message:
          'Wish 2 of 3 could not be replayed (the replay failed: no red headings here); nothing was saved.',
      },
    });
    const markup = html(failed);
    expect(markup).toContain('Could not update: 1 change replayed, 1 failed, 1 not tried.');
    expect(markup).toContain('“make the &lt;b&gt;heading&lt;/b&gt; red”');
    expect(markup).not.toContain('<b>heading</b>');
    expect(markup).toContain('>Remixed orders</h2>');
    expect(markup).toContain('>Update</button>');
    // Nothing changed: one version, the same trail, still drifted.
    expect(await historyOf(user, drifted.remix.id)).toHaveLength(1);
    expect((await wire.apps.trail(user, drifted.remix.id))?.map((w) => w.wish)).toEqual([
      'title: Mine',
      FAILING_WISH,
      'title: Never asked',
    ]);
    expect(await loadRemix(clientFor(user, redeployed), 'OrdersCard')).toMatchObject({
      status: 'remixed',
      remix: { version: 1, drifted: true },
      app: { document: seedDocument },
    });
  });

  it('leaves the host’s children alone when nobody is signed in or apps are off', async () => {
    expect(await loadRemix(clientFor(null), 'OrdersCard')).toEqual({ status: 'host' });
    const off = await startAppsWire({ apps: false });
    try {
      const client: WireClient = { baseUrl: off.baseUrl, fetch: off.fetchAs('ada') };
      expect(await loadRemix(client, 'OrdersCard')).toEqual({ status: 'host' });
    } finally {
      await off.close();
    }
    expect(html({ status: 'host' })).toBe(
      '<div class="svc-remixable" data-service-remixable="OrdersCard"><p>Host card</p></div>',
    );
  });
});

describe('Remixable on the page', () => {
  const remixed: RemixState = {
    status: 'remixed',
    remix: {
      id: 'app_1',
      name: 'Orders card',
      kind: 'remix',
      baselineKey: 'OrdersCard',
      baselineHash: 'sha256:a',
      forkedFrom: null,
      version: 1,
      servedVersion: 1,
      approvedHash: null,
      createdAt: '2030-01-01T00:00:00.000Z',
      updatedAt: '2030-01-01T00:00:00.000Z',
      drifted: false,
    },
    app: {
      id: 'app_1',
      name: 'Orders card',
      kind: 'remix',
      version: 1,
      document: seedDocument,
      queries: {},
      problems: [],
    },
  };

  it('without a provider renders only the host’s children in the marker', () => {
    expect(
      renderToStaticMarkup(
        <Remixable id="OrdersCard">
          <p>Card</p>
        </Remixable>,
      ),
    ).toBe('<div class="svc-remixable" data-service-remixable="OrdersCard"><p>Card</p></div>');
  });

  it('inside a provider, on the server, shows the host’s children until the page asks the wire', () => {
    expect(
      renderToStaticMarkup(
        <ServiceProvider baseUrl="/api/service">
          <Remixable id="OrdersCard">
            <p>Card</p>
          </Remixable>
        </ServiceProvider>,
      ),
    ).toBe('<div class="svc-remixable" data-service-remixable="OrdersCard"><p>Card</p></div>');
  });

  it('hides the controls, or renders the host’s own', () => {
    const hidden = html(remixed, { controls: null });
    expect(hidden).toContain('>Remixed orders</h2>');
    expect(hidden).not.toContain('<button');
    const own = html({ status: 'original' }, { controls: <button type="button">Make it mine</button> });
    expect(own).toContain('<p>Host card</p><button type="button">Make it mine</button>');
    expect(own).not.toContain('>Remix</button>');
  });

  it('offers Edit when the host handles editing', () => {
    expect(html(remixed, { onEdit: () => {} })).toContain('>Edit</button>');
    expect(html(remixed)).not.toContain('>Edit</button>');
  });
});
