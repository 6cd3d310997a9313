import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeInBrowser, HAS_CHROMIUM, launchChromium } from './support/chromium.js';
import { type RunningPlatform, startPlatform } from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

/**
 * The development sign-in page in a real headless Chromium: the form works end to end, cannot be
 * turned into an open redirect, and renders hostile values inert.
 */

let store: TestStore;
let running: RunningPlatform;
let browser: Browser;
let context: BrowserContext;

beforeAll(async () => {
  store = await openTestStore();
  running = await startPlatform(store);
  if (HAS_CHROMIUM) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await running?.close();
  await store?.dispose();
});
beforeEach(async () => {
  if (HAS_CHROMIUM) context = await browser.newContext();
});
afterEach(async () => context?.close());

/** Fetches the subject the dev IdP gives an email, the way a script would. */
async function subjectOf(email: string): Promise<string> {
  const response = await fetch(`${running.url}/auth/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  return ((await response.json()) as { user: { id: string } }).user.id;
}

describeInBrowser('development sign-in page', () => {
  it('signs the browser in and lands on the return path, which then shows loggedIn true', async () => {
    const page = await context.newPage();
    const response = await page.goto(`${running.url}/auth/v1/sign-in?return_to=/api/auth/me`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
    await page.fill('#email', 'Browser@Example.test');
    await Promise.all([page.waitForURL(`${running.url}/api/auth/me`), page.click('button[type=submit]')]);
    const body = JSON.parse((await page.textContent('body')) ?? '');
    expect(body).toEqual({
      loggedIn: true,
      userId: await subjectOf('browser@example.test'),
      email: 'browser@example.test',
    });

    const [cookie] = await context.cookies(running.url);
    expect(cookie).toMatchObject({ name: 'service_session', httpOnly: true, sameSite: 'Lax', path: '/' });
    // HttpOnly: the page's own scripts cannot read the session.
    expect(await page.evaluate(() => document.cookie)).not.toContain('service_session');
  });

  it('lands on / rather than off-site when return_to points elsewhere', async () => {
    const page = await context.newPage();
    const requested: string[] = [];
    page.on('request', (request) => requested.push(new URL(request.url()).host));
    await page.goto(`${running.url}/auth/v1/sign-in?return_to=${encodeURIComponent('//evil.example')}`);
    expect(await page.inputValue('input[name=return_to]')).toBe('/');
    await page.fill('#email', 'redirect@example.test');
    await Promise.all([page.waitForURL(`${running.url}/`), page.click('button[type=submit]')]);
    expect(new URL(page.url()).host).toBe(new URL(running.url).host);
    expect(requested.filter((host) => host !== new URL(running.url).host)).toEqual([]);
  });

  it('renders a hostile email value as inert text in the field', async () => {
    const hostile = '"><b id="injected">x</b><img src=x onerror="window.__pwned=1">';
    const page = await context.newPage();
    await page.goto(`${running.url}/auth/v1/sign-in?login_hint=${encodeURIComponent(hostile)}`);
    expect(await page.inputValue('#email')).toBe(hostile);
    expect(await page.locator('#injected').count()).toBe(0);
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it('shows the form again, escaped, when the server refuses the email', async () => {
    const page = await context.newPage();
    await page.goto(`${running.url}/auth/v1/sign-in?return_to=/api/auth/me`);
    // Skip the browser's own email check to reach the server's.
    await page.evaluate(() => document.querySelector('form')?.setAttribute('novalidate', ''));
    const hostile = '<b id="injected">not-an-email</b>';
    await page.fill('#email', hostile);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('button[type=submit]'),
    ]);
    expect(response.status()).toBe(400);
    await page.waitForSelector('[role=alert]');
    expect(await page.textContent('[role=alert]')).toContain('email is not a valid address');
    expect(await page.inputValue('#email')).toBe(hostile);
    expect(await page.locator('#injected').count()).toBe(0);
    expect(await context.cookies(running.url)).toEqual([]);
  });
});
