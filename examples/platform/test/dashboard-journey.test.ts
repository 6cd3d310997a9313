/**
 * The dashboard as a person meets it after `pnpm start`: the real platform process on an empty
 * embedded store with its demo seed, driven by clicking in headless Chromium.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  collectPageProblems,
  ensureDashboardBuilt,
  expectAccessible,
  screenshot,
} from '../../../packages/core/test/dashboard/support.js';
import {
  describeInBrowser,
  HAS_CHROMIUM,
  itInBrowser,
  launchChromium,
} from '../../../packages/core/test/support/chromium.js';
import { bootPlatform, freePort, type PlatformProcess } from './support/boot.js';

let cwd: string;
let base: string;
let platform: PlatformProcess;
let browser: Browser;

beforeAll(async () => {
  if (!HAS_CHROMIUM) return;
  ensureDashboardBuilt();
  cwd = mkdtempSync(join(tmpdir(), 'svc-journey-'));
  const port = await freePort();
  base = `http://localhost:${port}`;
  platform = await bootPlatform(cwd, { PORT: String(port) });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  if (platform) expect(await platform.stop()).toBe(0);
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

const demoFile = () => JSON.parse(readFileSync(join(cwd, '.service/demo.json'), 'utf8'));

/** Signs `email` in from the dashboard's front door, by clicking. */
async function signIn(page: Page, email: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.waitForURL(/\/sign-in\?/);
  await Promise.all([
    page.waitForURL(/\/auth\/v1\/sign-in/),
    page.locator('main').getByRole('link', { name: 'Sign in' }).click(),
  ]);
  await page.fill('#email', email);
  await Promise.all([page.waitForURL(`${base}/`), page.click('button[type=submit]')]);
  await page.waitForSelector('html[data-ready="true"]');
}

describeInBrowser('the dashboard after pnpm start', () => {
  itInBrowser(
    'the demo workspace: its balance, and the README call on the spend chart',
    async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const problems = collectPageProblems(page);
      await signIn(page, 'demo@example.com');
      expect(await page.textContent('[data-live="balance"]')).toBe('USD 25.00');

      // The README's metered call, made with the demo App Key.
      const answer = await fetch(`${base}/proxy/llm-gateway/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${demoFile().keys.appKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo-echo', messages: [{ role: 'user', content: 'hello' }] }),
      });
      expect(answer.status).toBe(200);
      // A call costs a fraction of a cent: the figure still reads USD 25.00, its micros moved.
      await page.waitForFunction(
        () =>
          (document.querySelector('[data-live="balance"]') as HTMLElement | null)?.dataset.micros !==
          '25000000',
      );
      await page.reload();
      await page.waitForSelector('#spend-chart[data-drawn="true"] canvas');
      expect(await page.locator('.chart thead th').allTextContents()).toEqual(['Date', 'llm-gateway']);
      await expectAccessible(page);
      await screenshot(page, 'journey-demo-home');

      // Every page of the navigation opens for the demo owner.
      for (const name of ['Billing', 'Integrations', 'Tools', 'Deployments', 'Keys', 'Members', 'Settings']) {
        await page.locator('nav').getByRole('link', { name, exact: true }).click();
        expect(await page.textContent('h1')).toBe(name);
      }

      // The catalog offers to deploy the example tool only: the research desk's release names
      // nothing this platform can run, so no wizard leads to a deploy that cannot succeed.
      await page.goto(`${base}/tools`);
      expect(await page.getByRole('link', { name: /^Deploy / }).allTextContents()).toEqual([
        'Deploy Balance watcher',
      ]);
      expect((await page.request.get(`${base}/tools/research-desk/deploy`)).status()).toBe(404);
      await page.goto(`${base}/tools/deployed-tool/deploy`);
      await page.waitForSelector('html[data-ready="true"]');
      expect(await page.locator('fieldset.wizard-step:visible').count()).toBe(1);

      // Credit bought through the development processor lands on the balance.
      await page.goto(`${base}/billing`);
      await Promise.all([page.waitForURL(/\/billing\/purchases\//), page.click('#pack-5')]);
      await Promise.all([page.waitForURL(/\/billing\?purchase=/), page.click('#confirm')]);
      expect(await page.textContent('#completed')).toBe('Added USD 5.00 of credit.');
      expect(problems.join('\n')).toBe('');
      await context.close();
    },
    90_000,
  );
});
