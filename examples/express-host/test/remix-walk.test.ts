/**
 * The demo host's remixes, reviews and apps page walked through in headless Chromium as a person
 * (and a reviewer) would, offline with the demo model:
 *
 * - on `/orders` the person remixes the orders summary (it shows in place with their data), asks
 *   the chat to change it (a wish in the trail, a new version), and sees the change on `/orders`;
 * - the host ships a changed summary (a restart on the same store with a changed seed): the remix
 *   says its component changed, **Update** makes exactly one new version, the new seed with the
 *   wish replayed on it by the demo model (`apply_wish`);
 * - **Revert** brings the host's own summary back, and the wire finds no remix of it any more;
 * - a remix of the header waits for review: the reviewer, in their own browser, cannot reject it
 *   without a note, approves it, and the person's page then serves it;
 * - `/apps` lists the person's apps, opens one with its history (also from a link naming it),
 *   exports one and deletes one.
 *
 * The pages are the real bundle over the real wire. Screenshots land in
 * `examples/express-host/test-results/`.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppSeed } from '@service/core/wire';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  CHROMIUM_PATH,
  describeInBrowser,
  launchChromium,
} from '../../../packages/core/test/support/chromium.js';
import { DEMO_REVIEWER, ORDERS_HEADER_SEED, ORDERS_SUMMARY_SEED } from '../src/apps.js';
import type { RunningHost } from '../src/host.js';
import { type BundledHost, bundledHost } from './support/bundled-host.js';

const ARTIFACTS = fileURLToPath(new URL('../test-results/', import.meta.url));
const PERSON = 'ada@example.com';

/** The host's next deploy: the summary is now titled "At a glance" (same component key). */
const CHANGED_SUMMARY_SEED: AppSeed = {
  ...ORDERS_SUMMARY_SEED,
  document: {
    ...(ORDERS_SUMMARY_SEED.document as Record<string, unknown>),
    root: {
      component: 'Card',
      props: { title: 'At a glance' },
      children: [
        { component: 'Stat', props: { label: 'Orders', value: { $query: 'orders', path: 'count' } } },
      ],
    },
  },
};

let bundled: BundledHost;
let host: RunningHost;

beforeAll(async () => {
  bundled = await bundledHost('chat-ui-remix-');
  host = bundled.host;
});
afterAll(async () => {
  await bundled?.close();
});

describeInBrowser(`the demo host's remixes and apps in headless Chromium (needs ${CHROMIUM_PATH})`, () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let summaryId: string;
  let headerId: string;

  beforeAll(async () => {
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
  });
  afterAll(async () => {
    await browser?.close();
  });

  const poll = <T>(actual: () => T) => expect.poll(actual, { timeout: 10_000 });
  const pathname = () => new URL(page.url()).pathname;
  const summary = () => page.locator('[data-service-remixable="orders-summary"]');
  const header = () => page.locator('[data-service-remixable="orders-header"]');
  const nav = (on: Page = page) => on.getByRole('navigation', { name: 'Pages' });

  /** Signs in on the sign-in page `on` was sent to, and waits to be back at `path`. */
  async function signIn(on: Page, email: string, path: string) {
    await poll(() => new URL(on.url()).pathname).toBe('/login');
    await on.getByLabel('Email').fill(email);
    await on.getByRole('button', { name: 'Sign in' }).click();
    await poll(() => new URL(on.url()).pathname).toBe(path);
  }

  /** A wire route with the page's own session. */
  async function wire<T>(path: string): Promise<T> {
    const answer = await page.request.get(`${host.url}/api/service${path}`);
    expect(answer.status()).toBe(200);
    return (await answer.json()) as T;
  }
  const versions = async (appId: string) =>
    (await wire<{ versions: Array<{ version: number }> }>(`/apps/${appId}/history`)).versions.map(
      (v) => v.version,
    );
  const wishes = async (appId: string) =>
    ((await host.service.context.apps!.store.trail(`user:${PERSON}`, appId)) ?? []).map((w) => w.wish);

  /** Sends a chat message; waits for the turn's stream to end. */
  async function send(text: string) {
    const turn = page.waitForResponse(
      (response) => response.request().method() === 'POST' && response.url().endsWith('/api/service/chat'),
    );
    await page.getByRole('textbox', { name: 'Message' }).fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
    await (await turn).text();
  }

  function screenshot(name: string) {
    mkdirSync(ARTIFACTS, { recursive: true });
    return page.screenshot({ path: join(ARTIFACTS, name) });
  }

  it('remixes the orders summary on /orders: the remix shows in place with the person’s data', async () => {
    await page.goto(`${host.url}/orders`);
    await signIn(page, PERSON, '/orders');
    await summary().getByRole('heading', { name: 'Summary' }).waitFor();
    expect(await summary().getAttribute('data-service-app')).toBeNull();
    await summary().getByRole('button', { name: 'Remix' }).click();

    const remix = page.locator('[data-service-remixable="orders-summary"][data-service-app]');
    await remix.locator('.svc-stat-value').getByText('2').waitFor();
    summaryId = (await remix.getAttribute('data-service-app'))!;
    expect(summaryId).toMatch(/^app_/);
    expect(await remix.getByRole('button', { name: 'Remix' }).count()).toBe(0);
    await remix.getByRole('button', { name: 'Revert' }).waitFor();
    expect(await versions(summaryId)).toEqual([1]);
    expect(await wishes(summaryId)).toEqual([]);
  });

  it('changes the remix in the chat: a wish in its trail and a new version, shown back on /orders', async () => {
    await nav().getByRole('link', { name: 'Chat' }).click();
    await poll(pathname).toBe('/');
    await send('add a chart to it');
    await page
      .locator('.message-assistant')
      .last()
      .getByText(`Done: saved as version 2 of ${summaryId}.`)
      .waitFor();
    expect(await versions(summaryId)).toEqual([2, 1]);
    expect(await wishes(summaryId)).toEqual(['add a chart to it']);

    await nav().getByRole('link', { name: 'Orders' }).click();
    await poll(pathname).toBe('/orders');
    const remix = page.locator(`[data-service-remixable="orders-summary"][data-service-app="${summaryId}"]`);
    await remix.locator('svg').first().waitFor();
    await remix.getByText('Summary', { exact: true }).waitFor();
    await remix.locator('.svc-stat-value').getByText('2').waitFor();
    expect(await remix.getByText('This component changed since you remixed it.').count()).toBe(0);
  });

  it('after the host ships a changed summary, Update moves the remix onto it with the wish replayed', async () => {
    host = await bundled.restart({ seeds: [CHANGED_SUMMARY_SEED, ORDERS_HEADER_SEED] });
    // A new host process: the person signs in again.
    await page.goto(`${host.url}/orders`);
    await signIn(page, PERSON, '/orders');
    const remix = page.locator(`[data-service-remixable="orders-summary"][data-service-app="${summaryId}"]`);
    const drift = remix.getByText('This component changed since you remixed it.');
    await drift.waitFor();
    // Still the remix as it was until the person updates it.
    await remix.getByText('Summary', { exact: true }).waitFor();
    await screenshot('orders-page-remix-drifted.png');

    await remix.getByRole('button', { name: 'Update' }).click();
    await remix.getByText('Updated to version 3: 1 change replayed.').waitFor();
    expect(await drift.count()).toBe(0);
    // The new seed, with the wish's chart on top of it.
    await remix.getByText('At a glance', { exact: true }).waitFor();
    await remix.locator('svg').first().waitFor();
    await remix.locator('.svc-stat-value').getByText('2').waitFor();
    expect(await versions(summaryId)).toEqual([3, 2, 1]);
    expect(await wishes(summaryId)).toEqual(['add a chart to it']);
    const found = await wire<{ apps: Array<{ id: string; drifted: boolean }> }>(
      '/apps?component=orders-summary',
    );
    expect(found.apps).toMatchObject([{ id: summaryId, drifted: false }]);
    await screenshot('orders-page-remix-updated.png');
  });

  it('Revert, once confirmed, brings the host’s own summary back and the wire finds no remix of it', async () => {
    const remix = page.locator(`[data-service-remixable="orders-summary"][data-service-app="${summaryId}"]`);
    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept();
    });
    await remix.getByRole('button', { name: 'Revert' }).click();
    await summary().getByRole('button', { name: 'Remix' }).waitFor();
    expect(asked).toEqual(['Revert to the original? Your remix of this component is deleted.']);
    expect(await summary().getAttribute('data-service-app')).toBeNull();
    // The host's own component: its section, not the Kit's card.
    await summary().getByRole('region', { name: 'Summary' }).waitFor();
    expect(await summary().getByText('At a glance').count()).toBe(0);
    expect(await wire<{ apps: unknown[] }>('/apps?component=orders-summary')).toMatchObject({ apps: [] });
  });

  it('a remix of the header waits for review; the reviewer needs a note to reject, approves, and it serves', async () => {
    await header().getByRole('button', { name: 'Remix' }).click();
    await header()
      .getByText('Your remix is waiting for review; the original shows until it is approved.')
      .waitFor();
    // The host's original shows meanwhile.
    expect(await header().getAttribute('data-service-app')).toBeNull();
    await header().locator('.orders-header').getByRole('heading', { name: 'Your orders' }).waitFor();
    const [pending] = (
      await wire<{ apps: Array<{ id: string; kind: string }> }>('/apps?component=orders-header')
    ).apps;
    expect(pending).toMatchObject({ kind: 'review' });
    headerId = pending!.id;

    // The reviewer, in their own browser.
    const reviewerContext = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    try {
      const reviewer = await reviewerContext.newPage();
      reviewer.setDefaultTimeout(10_000);
      await reviewer.goto(`${host.url}/orders`);
      await signIn(reviewer, DEMO_REVIEWER, '/orders');
      await nav(reviewer).getByRole('link', { name: 'Review' }).click();
      await poll(() => new URL(reviewer.url()).pathname).toBe('/review');
      const item = reviewer.locator(`.svc-page-review[data-service-app="${headerId}"]`);
      await item.getByRole('heading', { name: 'Orders header' }).waitFor();
      await item.getByText(`by user:${PERSON} · version 1`).waitFor();
      // The preview is the pending version's document.
      await item.getByRole('figure').getByText('Your orders').waitFor();

      // An empty note: the form refuses it, nothing is sent.
      const note = item.getByLabel('Why reject it? (required)');
      await item.getByRole('button', { name: 'Reject version 1' }).click();
      expect(await note.evaluate((field: HTMLTextAreaElement) => field.validity.valueMissing)).toBe(true);
      // A blank one gets past the form; the queue says a note is required.
      await note.fill('   ');
      await item.getByRole('button', { name: 'Reject version 1' }).click();
      await item.getByText('A note saying why is required to reject a version.').waitFor();
      expect(await versions(headerId)).toEqual([1]);
      const [stillPending] = (await wire<{ apps: Array<{ id: string }> }>('/apps?component=orders-header'))
        .apps;
      expect(stillPending).toMatchObject({ id: headerId });

      await item.getByRole('button', { name: 'Approve version 1' }).click();
      await reviewer.getByText('Approved version 1 of Orders header.').waitFor();
      await reviewer.getByText('Nothing is waiting for review.').waitFor();
    } finally {
      await reviewerContext.close();
    }

    await page.reload();
    const served = page.locator(`[data-service-remixable="orders-header"][data-service-app="${headerId}"]`);
    await served.getByRole('heading', { name: 'Your orders' }).waitFor();
    expect(await served.getByText('waiting for review').count()).toBe(0);
    expect(await served.locator('.orders-header').count()).toBe(0);
    await screenshot('orders-page-review-remix-served.png');
  });

  it('/apps lists the person’s apps, opens one with its history, exports one and deletes one', async () => {
    // A screen of their own beside the remix.
    await nav().getByRole('link', { name: 'Chat' }).click();
    await poll(pathname).toBe('/');
    await send('make a screen of my orders');
    const made = page
      .locator('.message-assistant')
      .last()
      .getByText(/^Done: saved as version 1 of app_/);
    await made.waitFor();
    const screenId = /(app_[\w-]+)/.exec((await made.textContent())!)![1]!;

    await nav().getByRole('link', { name: 'Your apps' }).click();
    await poll(pathname).toBe('/apps');
    const list = page.locator('.svc-page-list');
    const screenRow = list.locator(`[data-service-app="${screenId}"]`);
    const headerRow = list.locator(`[data-service-app="${headerId}"]`);
    await screenRow.getByRole('heading', { name: 'My orders' }).waitFor();
    await screenRow.getByText('App · version 1').waitFor();
    await headerRow.getByRole('heading', { name: 'Orders header' }).waitFor();
    await headerRow.getByText('Remix (reviewed) · version 1').waitFor();
    expect(await list.locator('li').count()).toBe(2);

    // Open the header's remix: the served version, and its history with the review.
    await page.getByRole('button', { name: 'Open Orders header' }).click();
    const detail = page.locator(`.svc-page-detail[data-service-app="${headerId}"]`);
    await detail.getByRole('heading', { name: 'Your orders' }).waitFor();
    await detail.getByText('Version 1 (showing)').waitFor();
    await detail.getByText(/^approved · /).waitFor();
    await detail.getByRole('button', { name: 'Close' }).click();

    // Export the screen: the file the browser downloads is the app's export.
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export My orders' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe(`${screenId}.service-app.json`);
    const exported = JSON.parse(readFileSync((await file.path())!, 'utf8')) as Record<string, unknown>;
    expect(JSON.stringify(exported)).toContain('My orders');
    expect(JSON.stringify(exported)).not.toContain(PERSON);

    // Delete it, once confirmed.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete My orders' }).click();
    await page.getByRole('status').getByText('Deleted My orders.').waitFor();
    await poll(() => screenRow.count()).toBe(0);
    expect(await list.locator('li').count()).toBe(1);
    expect((await wire<{ apps: Array<{ id: string }> }>('/apps')).apps.map((a) => a.id)).toEqual([headerId]);

    // A link naming an app (the MCP door's app-open card) opens it with its history.
    await page.goto(`${host.url}/apps?app=${headerId}`);
    await page
      .locator(`.svc-page-detail[data-service-app="${headerId}"]`)
      .getByText('Version 1 (showing)')
      .waitFor();
    await screenshot('apps-page.png');
  });
});
