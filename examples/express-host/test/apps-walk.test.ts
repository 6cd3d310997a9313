/**
 * The demo host's apps walked through in headless Chromium as a person would, offline with the
 * demo model: sign in, move between the chat page and the orders page, ask the chat for a screen
 * of the orders and watch its tree grow while the model writes it (the part building, part of the
 * tree already painted) and end as a table of the real orders, pin it beside the
 * orders, find it there, edit it into a second and a third version, and ask for a field the host does not
 * return, which is refused with nothing painted. The pages are the real bundle over the real wire.
 *
 * A screenshot of the orders page with the pinned app lands in `examples/express-host/test-results/`.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  CHROMIUM_PATH,
  describeInBrowser,
  launchChromium,
} from '../../../packages/core/test/support/chromium.js';
import type { RunningHost } from '../src/host.js';
import { type BundledHost, bundledHost } from './support/bundled-host.js';

const ARTIFACTS = fileURLToPath(new URL('../test-results/', import.meta.url));

let bundled: BundledHost;
let host: RunningHost;

beforeAll(async () => {
  bundled = await bundledHost('chat-ui-apps-');
  host = bundled.host;
});
afterAll(async () => {
  await bundled?.close();
});

describeInBrowser(`the demo host's apps in headless Chromium (needs ${CHROMIUM_PATH})`, () => {
  let browser: Browser;
  let page: Page;
  let appId: string;

  beforeAll(async () => {
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
    page.setDefaultTimeout(10_000);
  });
  afterAll(async () => {
    await browser?.close();
  });

  const poll = <T>(actual: () => T) => expect.poll(actual, { timeout: 10_000 });
  const lastAnswer = () => page.locator('.message-assistant').last();
  const pathname = () => new URL(page.url()).pathname;
  const slot = () => page.locator('[data-service-slot="orders.side"]');

  /** Sends a message; answers the turn's whole stream as the page received it. */
  async function send(text: string): Promise<string> {
    const turn = page.waitForResponse(
      (response) => response.request().method() === 'POST' && response.url().endsWith('/api/service/chat'),
    );
    await page.getByRole('textbox', { name: 'Message' }).fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
    return (await turn).text();
  }

  /** The states of the app parts a turn's stream carried, in order. */
  function appStates(stream: string): Array<{ id: string; state: string }> {
    return stream
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)) as { type: string; id?: string; data?: { state?: string } })
      .filter((chunk) => chunk.type === 'data-service-app')
      .map((chunk) => ({ id: chunk.id!, state: chunk.data!.state! }));
  }

  /**
   * What a building app part shows at one moment: its status line, the stats painted, and how
   * many nodes its root stack holds so far.
   */
  type BuildingView = { status: string; stats: number; stacked: number };

  /**
   * Starts recording every view of a building app part (`aria-busy`) the page shows, as the DOM
   * changes: the partial tree is painted and replaced within the turn, so it is watched, not
   * polled for. A string, so the page runs it as written.
   */
  async function watchBuildingParts(): Promise<void> {
    await page.evaluate(`(() => {
      const seen = (window.__buildingViews = []);
      window.__buildingWatch?.disconnect();
      window.__buildingWatch = new MutationObserver(() => {
        for (const part of document.querySelectorAll('.svc-app-part[aria-busy="true"]')) {
          const view = {
            status: part.querySelector('[role="status"]')?.textContent ?? '',
            stats: part.querySelectorAll('.svc-stat').length,
            stacked: part.querySelector('.svc-stack')?.children.length ?? 0,
          };
          const last = seen.at(-1);
          if (!last || JSON.stringify(last) !== JSON.stringify(view)) seen.push(view);
        }
      });
      window.__buildingWatch.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
    })()`);
  }

  /** The building views recorded since `watchBuildingParts`, which stops recording. */
  async function buildingViews(): Promise<BuildingView[]> {
    return page.evaluate(`(() => {
      window.__buildingWatch?.disconnect();
      return window.__buildingViews ?? [];
    })()`);
  }

  /** The app's kept versions, asked with the page's own session. */
  async function versions(): Promise<number[]> {
    const answer = await page.request.get(`${host.url}/api/service/apps/${appId}/history`);
    expect(answer.status()).toBe(200);
    return ((await answer.json()) as { versions: Array<{ version: number }> }).versions.map((v) => v.version);
  }

  it('signs in on the way to the orders page, which shows the host’s own orders and links the chat', async () => {
    await page.goto(`${host.url}/orders`);
    expect(pathname()).toBe('/login');
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await poll(pathname).toBe('/orders');
    const orders = page.getByRole('table', { name: 'Orders' });
    await orders.getByRole('cell', { name: 'A-1001' }).waitFor();
    await orders.getByRole('cell', { name: 'A-1002' }).waitFor();
    // The remixable host components and the slot, empty: the host's own words show in it.
    await page.locator('[data-service-remixable="orders-header"]').getByText('Your orders').waitFor();
    await page.locator('[data-service-remixable="orders-summary"]').getByText('Orders').waitFor();
    await page.getByText('Your own screen can go here.').waitFor();
    expect(await slot().count()).toBe(0);

    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Chat' }).click();
    await poll(pathname).toBe('/');
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Orders' }).waitFor();
  });

  it('builds a screen of the orders in the chat: the tree grows while it is written and ends as a table of the real orders', async () => {
    await watchBuildingParts();
    const stream = await send('make a screen of my orders');
    const part = lastAnswer().locator('.svc-app-part');
    await part.getByRole('cell', { name: 'A-1001' }).waitFor();
    await part.getByRole('cell', { name: 'A-1002' }).waitFor();
    // Before the table of the real orders, the part was building with part of its tree painted:
    // the stat, with the table not yet written (the checked document's building view holds both).
    const building = await buildingViews();
    expect(building).toContainEqual({ status: 'Building My orders…', stats: 1, stacked: 1 });
    expect(await part.getAttribute('aria-busy')).toBeNull();
    appId = (await part.getAttribute('data-service-app'))!;
    expect(appId).toMatch(/^app_/);
    // One part, written under the app's id: building first, final last.
    const states = appStates(stream);
    expect(new Set(states.map((s) => s.id))).toEqual(new Set([appId]));
    expect(states[0]!.state).toBe('streaming');
    expect(states.at(-1)!.state).toBe('final');
    expect(await part.locator('.svc-stat-value').textContent()).toContain('2');
    await lastAnswer().getByText(`Done: saved as version 1 of ${appId}.`).waitFor();
    expect(await versions()).toEqual([1]);
  });

  it('pins it to the orders page, where it shows in the slot beside the host’s own orders', async () => {
    await send('pin it to orders.side');
    await lastAnswer().getByText('Done: it shows Beside my orders on /orders.').waitFor();
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Orders' }).click();
    await poll(pathname).toBe('/orders');
    const placed = page.locator(`[data-service-slot="orders.side"][data-service-app="${appId}"]`);
    await placed.getByRole('cell', { name: 'A-1001' }).waitFor();
    await placed.getByRole('cell', { name: 'A-1002' }).waitFor();
    expect(await page.getByText('Your own screen can go here.').count()).toBe(0);
    // The host's own content is still there.
    await page
      .getByRole('table', { name: 'Orders' })
      .getByRole('cell', { name: 'Espresso machine' })
      .waitFor();
    await page.locator('[data-service-remixable="orders-summary"]').waitFor();
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'orders-page-with-app.png') });
    await page.goBack();
    await poll(pathname).toBe('/');
  });

  it('edits it in the chat into a second version', async () => {
    await lastAnswer().getByText('Done: it shows Beside my orders on /orders.').waitFor();
    await send('add the notes to it');
    const part = lastAnswer().locator('.svc-app-part');
    await part.getByRole('columnheader', { name: 'Note' }).waitFor();
    await part.getByRole('cell', { name: 'A-1001' }).waitFor();
    await lastAnswer().getByText(`Done: saved as version 2 of ${appId}.`).waitFor();
    expect(await versions()).toEqual([2, 1]);
  });

  it('adds a chart of the orders by status: a third version', async () => {
    await send('add a chart to it');
    const part = lastAnswer().locator('.svc-app-part');
    await part.locator('svg').first().waitFor();
    await part.getByRole('columnheader', { name: 'Note' }).waitFor();
    await lastAnswer().getByText(`Done: saved as version 3 of ${appId}.`).waitFor();
    expect(await versions()).toEqual([3, 2, 1]);
  });

  it('refuses a field the host does not return: a failed receipt, the last good version kept, no new version', async () => {
    const stream = await send("add the customer's shoe size");
    await lastAnswer()
      .getByText(/^I could not change the screen: refused, nothing saved/)
      .waitFor();
    // A refused edit shows the app's last good version again, never the refused tree.
    const kept = lastAnswer().locator('.svc-app-part');
    await kept.getByRole('columnheader', { name: 'Note' }).waitFor();
    expect(await kept.getByRole('columnheader', { name: /shoe/i }).count()).toBe(0);
    expect(await lastAnswer().locator('.svc-app-part-failed').count()).toBe(0);
    expect(appStates(stream).at(-1)).toEqual({ id: appId, state: 'final' });
    expect(await versions()).toEqual([3, 2, 1]);

    // The orders page still shows version 3.
    await page.goto(`${host.url}/orders`);
    const placed = page.locator(`[data-service-slot="orders.side"][data-service-app="${appId}"]`);
    await placed.getByRole('columnheader', { name: 'Note' }).waitFor();
    await placed.locator('svg').first().waitFor();
    expect(await placed.getByRole('columnheader', { name: /shoe/i }).count()).toBe(0);
  });
});
