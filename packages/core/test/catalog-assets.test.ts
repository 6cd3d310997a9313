/**
 * What the catalog links to, served by the platform: each integration's generated logo (an SVG
 * that runs nothing) and docs page (what it is, its profiles and environment, its public prices,
 * how to enable it), each tool's icon; opened in headless Chromium, with names that try to break
 * out of their markup.
 *
 * @see docs/api/integrations.md "Logos and docs pages"
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { monogram } from '../src/catalog/icons.js';
import { HAS_CHROMIUM, itInBrowser, launchChromium } from './support/chromium.js';
import { seedProviders } from './support/metered.js';
import { type RunningPlatform, startPlatformAtOwnUrl } from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

const HOSTILE = 'Evil <script>alert(1)</script> & "co"';

let store: TestStore;
let server: RunningPlatform;
let browser: Browser;

beforeAll(async () => {
  store = await openTestStore();
  server = await startPlatformAtOwnUrl(store);
  await seedProviders(server.platform, 'http://127.0.0.1:9');
  await store.db.updateTable('meter_rates').set({ public: true }).where('provider', '=', 'search').execute();
  await store.db
    .insertInto('integrations')
    .values([
      { provider: 'evil', name: HOSTILE, description: '<img src=x onerror="alert(2)">', category: 'x' },
      { provider: 'retired', name: 'Retired', enabled: false },
    ])
    .execute();
  if (HAS_CHROMIUM) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await store?.dispose();
});

describe('logos and icons', () => {
  it('serve a monogram SVG that runs nothing, for every integration the list names', async () => {
    const { integrations } = (await (await fetch(`${server.url}/api/integrations`)).json()) as {
      integrations: Array<{ provider: string; logo_url: string; docs_url: string }>;
    };
    for (const row of integrations) {
      expect(row.logo_url).toBe(`${server.url}/static/integrations/${row.provider}.svg`);
      const response = await fetch(row.logo_url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('content-security-policy')).toBe(
        "default-src 'none'; style-src 'unsafe-inline'",
      );
      expect(response.headers.get('cache-control')).toBe('public, max-age=86400');
    }
    const evil = await (await fetch(`${server.url}/static/integrations/evil.svg`)).text();
    expect(evil).not.toContain('<script');
    expect(evil).toContain('Evil &lt;script&gt;');
    expect(monogram(HOSTILE)).toBe('ES');
    expect(monogram('LLM')).toBe('LL');
    expect(monogram('Web search')).toBe('WS');
  });

  itInBrowser('render in a browser as an image, and unknown or disabled ones are 404', async () => {
    const page = await browser.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    try {
      await page.goto(`${server.url}/static/integrations/evil.svg`);
      expect(await page.evaluate(() => document.documentElement.tagName)).toBe('svg');
      expect(await page.locator('text').textContent()).toBe('ES');
      await page.goto(`${server.url}/static/tools/meeting-notes.svg`);
      expect(await page.locator('text').textContent()).toBe('MN');
      expect(dialogs).toEqual([]);
    } finally {
      await page.close();
    }
    for (const path of [
      '/static/integrations/retired.svg',
      '/static/integrations/nope.svg',
      '/static/integrations/search.png',
      '/static/integrations/..%2Fsearch.svg',
      '/static/tools/Bad_Slug.svg',
      `/static/tools/${'x'.repeat(100)}.svg`,
    ]) {
      const response = await fetch(`${server.url}${path}`);
      expect(response.status, path).toBe(404);
      expect(response.headers.get('content-type')).toContain('text/html');
    }
  });
});

describe('docs pages', () => {
  itInBrowser(
    'tell what the integration is, its profiles, environment, public prices and how to enable it',
    async () => {
      const page = await browser.newPage();
      try {
        const response = await page.goto(`${server.url}/docs/integrations/search`);
        expect(response?.status()).toBe(200);
        expect(await page.locator('h1').textContent()).toBe('Search');
        expect(await page.locator('#profiles').textContent()).toBe('vendo_managed_pool (default)byok_static');
        expect(await page.locator('#env').textContent()).toContain('SEARCH_API_KEY from app_key');
        expect(await page.locator('#prices').textContent()).toContain('callany0.0012 per call');
        expect(await page.locator('pre').textContent()).toContain(
          `POST ${server.url}/api/integrations/search`,
        );
        await page.goto(`${server.url}/docs/integrations/llm`);
        expect(await page.locator('#prices').textContent()).toBe('This integration has no public prices.');
      } finally {
        await page.close();
      }
    },
  );

  itInBrowser(
    'escape what the catalog says, and answer 404 for unknown or disabled integrations',
    async () => {
      const page = await browser.newPage();
      const dialogs: string[] = [];
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
      try {
        await page.goto(`${server.url}/docs/integrations/evil`);
        expect(await page.locator('h1').textContent()).toBe(HOSTILE);
        expect(await page.locator('#description').textContent()).toBe('<img src=x onerror="alert(2)">');
        expect(await page.locator('img').count()).toBe(0);
        expect(dialogs).toEqual([]);
      } finally {
        await page.close();
      }
      for (const slug of ['retired', 'nope', 'x'.repeat(300)]) {
        const response = await fetch(`${server.url}/docs/integrations/${slug}`);
        expect(response.status).toBe(404);
        expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
      }
    },
  );
});
