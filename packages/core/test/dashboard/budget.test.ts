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

describeInBrowser('the dashboard budget', () => {
  itInBrowser(
    'every page loads within it',
    async () => {
      const owner = await signedInOwner(server, 'budget@example.test');
      const measured: Record<string, { scriptGzip: number; requests: number; dclMs: number }> = {};
      for (const path of PAGES) {
        // A fresh context each time: a first load, nothing cached.
        const context = await contextWithCookie(browser, server.url, owner.cookie);
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
        measured[path] = { scriptGzip, requests: requests.length, dclMs };
        expect(
          requests.filter((url) => !url.startsWith(server.url)),
          path,
        ).toEqual([]);
        await context.close();
      }
      for (const [path, m] of Object.entries(measured)) {
        expect(m.scriptGzip, `${path} script`).toBeGreaterThan(0);
        expect(m.scriptGzip, `${path} script`).toBeLessThanOrEqual(BUDGET.scriptGzipBytes);
        expect(m.requests, `${path} requests`).toBeLessThanOrEqual(BUDGET.requests);
        expect(m.dclMs, `${path} DOMContentLoaded`).toBeLessThanOrEqual(BUDGET.domContentLoadedMs);
      }
    },
    90_000,
  );
});
