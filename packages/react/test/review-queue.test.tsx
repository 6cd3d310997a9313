/**
 * `<ReviewQueue>` against a real wire (Express on loopback) with a reviewer and a review seed:
 * the queue with a preview of each pending version, an approval of exactly that version, a
 * rejection that needs a note, a stale decision that reloads the item with the wire's words, and
 * a non-reviewer's refusal. Then what the queue renders, server-side.
 */
import { renderToStaticMarkup } from 'react-dom/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppsWire, startAppsWire } from '../../core/test/support/apps-wire.js';
import {
  decideReview,
  loadReviewQueue,
  NOTE_REQUIRED,
  type ReviewEntry,
  type ReviewQueueState,
  ReviewQueueView,
  seedRemix,
} from '../src/index.js';
import type { WireClient } from '../src/wire.js';

const stockDocument = {
  version: 1,
  title: 'Stock card',
  root: { component: 'Heading', props: { text: 'Remixed stock' } },
};
const editedDocument = {
  version: 1,
  title: 'Stock card',
  root: { component: 'Heading', props: { text: 'Edited stock' } },
};

describe('the review queue against the wire', () => {
  let wire: AppsWire;
  let serial = 0;
  const someone = () => `review-person-${++serial}`;
  const calls: string[] = [];
  const clientFor = (user: string | null): WireClient => {
    const signedIn = wire.fetchAs(user);
    return {
      baseUrl: wire.baseUrl,
      fetch: (input, init) => {
        calls.push(`${init?.method ?? 'GET'} ${String(input).slice(wire.baseUrl.length)}`);
        return signedIn(input, init);
      },
    };
  };
  const rita = () => clientFor('rita');

  /** A person's review remix of the stock card, pending review; answers the queue entry for it. */
  const pendingRemix = async (owner: string): Promise<ReviewEntry> => {
    const { app } = await seedRemix(clientFor(owner), 'StockCard');
    const queue = await loadReviewQueue(rita());
    const entry =
      queue.status === 'ready' ? queue.entries.find((each) => each.item.appId === app.id) : undefined;
    if (!entry) throw new Error(`no queue entry for ${app.id}: ${JSON.stringify(queue)}`);
    return entry;
  };

  beforeAll(async () => {
    wire = await startAppsWire({
      apps: {
        reviewer: (user) => user.subject === 'rita',
        seeds: [{ component: 'StockCard', name: 'Stock card', document: stockDocument, review: true }],
      },
    });
  });
  afterAll(async () => {
    await wire?.close();
  });

  it('lists each pending version with its owner and a preview, and approves exactly it', async () => {
    const ada = someone();
    const entry = await pendingRemix(ada);
    expect(entry).toMatchObject({
      item: { owner: ada, name: 'Stock card', version: 1, contentHash: expect.any(String) },
      document: stockDocument,
    });
    const html = renderToStaticMarkup(<ReviewQueueView state={{ status: 'ready', entries: [entry] }} />);
    expect(html).toContain(`by ${ada} · version 1`);
    expect(html).toContain('>Remixed stock</h2>');

    const approved = await decideReview(rita(), entry, { approve: true });
    expect(approved).toEqual({ status: 'decided', version: 1, message: 'Approved version 1 of Stock card.' });
    const queue = await loadReviewQueue(rita());
    expect(
      queue.status === 'ready' && queue.entries.some((each) => each.item.appId === entry.item.appId),
    ).toBe(false);
    const opened = await (
      await wire.fetchAs(ada)(`${wire.baseUrl}/apps/${entry.item.appId}/open`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
    ).json();
    expect(opened).toMatchObject({ version: 1, document: stockDocument });
  });

  it('rejects only with a note, which the wire keeps', async () => {
    const entry = await pendingRemix(someone());
    const before = calls.length;
    expect(await decideReview(rita(), entry, { approve: false, note: '   ' })).toEqual({
      status: 'refused',
      message: NOTE_REQUIRED,
    });
    expect(calls.length).toBe(before);

    const rejected = await decideReview(rita(), entry, { approve: false, note: 'Hides the stock count' });
    expect(rejected).toEqual({ status: 'decided', version: 1, message: 'Rejected version 1 of Stock card.' });
    const html = renderToStaticMarkup(<ReviewQueueView state={{ status: 'ready', entries: [entry] }} />);
    expect(html).toContain('<label for="svc-review-note-');
    expect(html).toContain('Why reject it? (required)</label>');
    expect(html).toMatch(/<textarea id="svc-review-note-[^"]+" required=""/);
  });

  it('reloads a stale item with the wire’s words, then approves the version now pending', async () => {
    const ada = someone();
    const entry = await pendingRemix(ada);
    await wire.apps.addVersion(ada, entry.item.appId, {
      document: editedDocument,
      contentHash: 'sha256:edited',
    });

    const stale = await decideReview(rita(), entry, { approve: true });
    expect(stale).toMatchObject({
      status: 'reloaded',
      message: expect.stringMatching(/changed since/),
      entry: { item: { version: 2, contentHash: 'sha256:edited' }, document: editedDocument },
    });
    if (stale.status !== 'reloaded' || !stale.entry) throw new Error('expected the reloaded item');
    const html = renderToStaticMarkup(
      <ReviewQueueView state={{ status: 'ready', entries: [stale.entry] }} />,
    );
    expect(html).toContain('The app has changed since');
    expect(html).toContain('>Edited stock</h2>');

    expect(await decideReview(rita(), stale.entry, { approve: true })).toMatchObject({
      status: 'decided',
      version: 2,
    });
    const again = await decideReview(rita(), stale.entry, { approve: true });
    expect(again).toMatchObject({ status: 'reloaded', entry: null });
    expect(again.status === 'reloaded' && again.message).toBeTruthy();
  });

  it('shows a non-reviewer the wire’s refusal as a plain message', async () => {
    const refused = await loadReviewQueue(clientFor(someone()));
    expect(refused).toEqual({ status: 'refused', message: 'Only reviewers may review apps.' });
    const html = renderToStaticMarkup(<ReviewQueueView state={refused} />);
    expect(html).toContain('<p class="svc-text">Only reviewers may review apps.</p>');
    expect(html).not.toContain('<button');
  });
});

describe('what the review queue renders', () => {
  const render = (state: ReviewQueueState) => renderToStaticMarkup(<ReviewQueueView state={state} />);

  it('says when nothing waits, and while loading', () => {
    expect(render({ status: 'ready', entries: [] })).toContain('Nothing is waiting for review.');
    expect(render({ status: 'loading' })).toContain('aria-busy="true"');
  });

  it('shows hostile names as text', () => {
    const html = render({
      status: 'ready',
      entries: [
        {
          item: {
            appId: 'app_x',
            owner: '<img src=x>',
            name: '<script>x</script>',
            baselineKey: 'StockCard',
            version: 1,
            contentHash: 'h',
            createdAt: '2030-01-01T00:00:00.000Z',
          },
          document: null,
        },
      ],
    });
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect(html).toContain('by &lt;img src=x&gt;');
    expect(html).toContain('No preview of this version could be loaded.');
  });
});
