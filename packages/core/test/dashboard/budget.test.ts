/**
 * The dashboard's performance budget, measured in headless Chromium on each page a signed-in
 * owner opens: script transferred on first load (gzip), requests per page, time to
 * DOMContentLoaded on loopback, and nothing fetched from another origin.
 */
import { gzipSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  contextWithCookie,
  describeInBrowser,
  HAS_CHROMIUM,
  itInBrowser,
  launchChromium,
} from '../support/chromium.js';
import { type RunningPlatform, signedInOwner, startPlatformAtOwnUrl } from '../support/platform.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { ensureDashboardBuilt } from './support.js';

/** The budget `docs/dashboard.md` states. */
const BUDGET = { scriptGzipBytes: 150 * 1024, requests: 4, domContentLoadedMs: 1000 };
const PAGES = [
  '/',
  '/billing',
  '/integrations',
  '/tools',
  '/deployments',
  '/keys',
  '/members',
  '/settings',
  '/pricing',
];

let store: TestStore;
let server: RunningPlatform;
let browser: Browser;

beforeAll(async () => {
  ensureDashboardBuilt();
  store = await openTestStore();
  server = await startPlatformAtOwnUrl(store);
  if (HAS_CHROMIUM) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await store?.dispose();
});

type Load = { scriptGzip: number; requests: string[]; dclMs: number };

/** A page loaded in a fresh context: a first load, nothing cached. */
async function firstLoad(cookie: string, path: string): Promise<Load> {
  const context = await contextWithCookie(browser, server.url, cookie);
  const page = await context.newPage();
  const requests: string[] = [];
  let scriptGzip = 0;
  page.on('request', (request) => {
    requests.push(request.url());
  });
  page.on('response', async (response) => {
    if (response.request().resourceType() === 'script')
      scriptGzip += gzipSync(await response.body()).byteLength;
  });
  await page.goto(`${server.url}${path}`);
  await page.waitForSelector('html[data-ready="true"]');
  const dclMs = await page.evaluate(() => {
    const [nav] = performance.getEntriesByType('navigation') as PerformanceNavigationTiming[];
    return nav ? nav.domContentLoadedEventEnd - nav.startTime : Number.POSITIVE_INFINITY;
  });
  await context.close();
  return { scriptGzip, requests, dclMs };
}

/**
 * Loads of each page at most; its time is the fastest (see docs/dashboard.md "Budget"). A page
 * stops being loaded once a load is within the time budget: the fastest of three is within it
 * exactly when one of them is, and each load (a fresh context, its renderer) costs about a second
 * on two shared cores, so loading on after a good one only made the test slower.
 */
const LOADS = 3;

describeInBrowser('the dashboard budget', () => {
  itInBrowser(
    'every page loads within it',
    async () => {
      const { cookie } = await signedInOwner(server, 'budget@example.test');
      // One load first, not counted: the budget is a page's, not that of the first page a new
      // browser shows (its renderer starting) from a server that has rendered nothing yet.
      await firstLoad(cookie, '/');
      for (const path of PAGES) {
        const loads: Load[] = [];
        while (loads.length < LOADS && !loads.some((load) => load.dclMs <= BUDGET.domContentLoadedMs))
          loads.push(await firstLoad(cookie, path));
        // What a load fetches counts on every load made.
        for (const load of loads) {
          expect(load.scriptGzip, `${path} script`).toBeGreaterThan(0);
          expect(load.scriptGzip, `${path} script`).toBeLessThanOrEqual(BUDGET.scriptGzipBytes);
          expect(load.requests.length, `${path} requests`).toBeLessThanOrEqual(BUDGET.requests);
          expect(
            load.requests.filter((url) => !url.startsWith(server.url)),
            `${path} requests to another origin`,
          ).toEqual([]);
        }
        const times = loads.map((load) => Math.round(load.dclMs));
        expect(Math.min(...times), `${path} DOMContentLoaded (${times.join(', ')} ms)`).toBeLessThanOrEqual(
          BUDGET.domContentLoadedMs,
        );
      }
    },
    120_000,
  );
});
