/**
 * The consent and connect pages in a real headless Chromium: approve by clicking, deny, a hostile
 * `client_name` shown inert, the CSP present, no script on `/connect`.
 */
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeInBrowser, HAS_CHROMIUM, launchChromium } from '../support/chromium.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import { authorizeUrl, exchange, pkce, register } from './support/oauth-flow.js';

const HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>"\'&';

let store: TestStore;
let host: DoorHost;
let browser: Browser;
let context: BrowserContext;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store, { mcp: { productName: 'Notes', theme: { accent: '#0a7d45' } } });
  if (HAS_CHROMIUM) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await host?.close();
  await store?.dispose();
});
beforeEach(async () => {
  if (HAS_CHROMIUM) context = await browser.newContext();
});
afterEach(async () => context?.close());

/** Opens the authorize URL, signs in on the host's page, and waits for the consent page. */
async function reachConsent(url: string, subject: string) {
  const page = await context.newPage();
  await page.goto(url);
  await page.fill('#subject', subject);
  const [consentResponse] = await Promise.all([
    page.waitForResponse(
      (r) => r.url().startsWith(`${host.url}/api/service/mcp/authorize`) && r.request().method() === 'GET',
    ),
    page.click('button[type=submit]'),
  ]);
  await page.waitForSelector('button[value=approve]');
  return { page, consentResponse };
}

describeInBrowser('consent page in Chromium', () => {
  it('approves by clicking, landing on the client with a code that exchanges for tokens', async () => {
    const client = await register(host, { client_name: 'Browser client' });
    const pair = pkce();
    const { page, consentResponse } = await reachConsent(
      authorizeUrl(host, client, pair.challenge),
      'clicker',
    );
    expect(consentResponse.status()).toBe(200);
    const headers = consentResponse.headers();
    expect(headers['content-security-policy']).toContain("default-src 'none'");
    expect(headers['content-security-policy']).toContain("form-action 'self'");
    expect(headers['cache-control']).toBe('no-store');
    expect(await page.textContent('h1')).toContain('Browser client wants to use Notes as you');
    expect(await page.textContent('p.muted')).toContain('Signed in as clicker');

    await Promise.all([page.waitForURL(`${client.redirectUri}?**`), page.click('button[value=approve]')]);
    const landed = new URL(page.url());
    expect(landed.searchParams.get('state')).toBe('state-123');
    const tokens = await exchange(host, { code: landed.searchParams.get('code')!, client, pkce: pair });
    expect(tokens.access_token).toMatch(/^mcp_at_/);
  });

  it('lets the approval redirect reach a client on another origin (CSP form-action names it)', async () => {
    const elsewhere = host.url.replace('127.0.0.1', 'localhost');
    const client = await register(host, { redirect_uris: [`${elsewhere}/callback`] });
    const { page, consentResponse } = await reachConsent(
      authorizeUrl(host, client, pkce().challenge),
      'crosser',
    );
    expect(consentResponse.headers()['content-security-policy']).toContain(`form-action 'self' ${elsewhere}`);
    await Promise.all([page.waitForURL(`${elsewhere}/callback?**`), page.click('button[value=approve]')]);
    expect(new URL(page.url()).searchParams.get('code')).toMatch(/^mcp_code_/);
  });

  it('lands on a loopback client at the port it listens on, not the one it registered', async () => {
    const client = await register(host, { redirect_uris: ['http://127.0.0.1/callback'] });
    const listening = { ...client, redirectUri: `${host.url}/callback` };
    const pair = pkce();
    const { page, consentResponse } = await reachConsent(
      authorizeUrl(host, listening, pair.challenge),
      'native',
    );
    expect(consentResponse.headers()['content-security-policy']).toContain(`form-action 'self' ${host.url}`);
    await Promise.all([page.waitForURL(`${host.url}/callback?**`), page.click('button[value=approve]')]);
    const code = new URL(page.url()).searchParams.get('code')!;
    expect((await exchange(host, { code, client: listening, pkce: pair })).access_token).toMatch(/^mcp_at_/);
  });

  it('lets the approval reach an IPv6 loopback client, whose host CSP cannot name', async () => {
    const client = await register(host, { redirect_uris: ['http://[::1]/cb'] });
    const { page, consentResponse } = await reachConsent(
      authorizeUrl(host, { ...client, redirectUri: 'http://[::1]:9607/cb' }, pkce().challenge),
      'ipv6-user',
    );
    // `http://[::1]:9607` is not a valid CSP source: Chromium would drop it and block the post.
    expect(consentResponse.headers()['content-security-policy']).toContain("form-action 'self' http:;");
    const refusals: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) refusals.push(message.text());
    });
    // Nothing listens on [::1]:9607: the browser heading there is what the click must achieve.
    const [landing] = await Promise.all([
      page.waitForRequest((r) => r.url().startsWith('http://[::1]:9607/cb?'), { timeout: 10_000 }),
      page.click('button[value=approve]'),
    ]);
    expect(new URL(landing.url()).searchParams.get('code')).toMatch(/^mcp_code_/);
    expect(refusals).toEqual([]);
  });

  it("hands the approval to an app's own scheme without the page's CSP blocking it", async () => {
    const client = await register(host, { redirect_uris: ['cursor://anysphere.cursor-mcp/oauth/callback'] });
    const { page } = await reachConsent(authorizeUrl(host, client, pkce().challenge), 'cursor-user');
    const refusals: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) refusals.push(message.text());
    });
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST', { timeout: 10_000 }),
      page.click('button[value=approve]'),
    ]);
    expect(answer.status()).toBe(303);
    expect(answer.headers().location).toMatch(
      /^cursor:\/\/anysphere\.cursor-mcp\/oauth\/callback\?code=mcp_code_/,
    );
    // A form-action that did not name the scheme would have the browser refuse the hand-off here.
    await page.waitForTimeout(500);
    expect(refusals).toEqual([]);
  });

  it('denies by clicking, landing on the client with access_denied', async () => {
    const client = await register(host);
    const { page } = await reachConsent(authorizeUrl(host, client, pkce().challenge), 'denier');
    await Promise.all([page.waitForURL(`${client.redirectUri}?**`), page.click('button[value=deny]')]);
    const landed = new URL(page.url());
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('code')).toBeNull();
  });

  it('shows a hostile client_name as text, running none of it', async () => {
    const client = await register(host, { client_name: HOSTILE });
    const { page } = await reachConsent(authorizeUrl(host, client, pkce().challenge), 'target');
    expect(await page.textContent('.client')).toBe(HOSTILE);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('.client img, .client script').count()).toBe(0);
    expect(await page.evaluate(() => document.scripts.length)).toBe(0);
  });

  it("keeps a client_name's direction overrides inside the name: the page's own words read as written", async () => {
    // U+202E (right-to-left override) unterminated: without isolation it reverses what follows it.
    const client = await register(host, { client_name: 'Helper \u202E' });
    const { page } = await reachConsent(authorizeUrl(host, client, pkce().challenge), 'bidi-target');
    // Where the first and last letters of "wants" are drawn: left to right, w comes first.
    const [first, last] = await page.evaluate(() => {
      const heading = document.querySelector('h1')!;
      const walker = document.createTreeWalker(heading, NodeFilter.SHOW_TEXT);
      let node = walker.nextNode();
      while (node && !node.textContent!.includes('wants')) node = walker.nextNode();
      const at = node!.textContent!.indexOf('wants');
      const left = (offset: number) => {
        const range = document.createRange();
        range.setStart(node!, offset);
        range.setEnd(node!, offset + 1);
        return range.getBoundingClientRect().left;
      };
      return [left(at), left(at + 4)];
    });
    expect(first).toBeLessThan(last);
  });
});

describeInBrowser('connect page in Chromium', () => {
  it('is themed, names the product and the MCP URL, gives per-client steps and ships no script', async () => {
    const page = await context.newPage();
    const response = await page.goto(`${host.url}/api/service/mcp/connect`);
    expect(response?.status()).toBe(200);
    const csp = response?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('script-src');
    expect(await page.evaluate(() => document.scripts.length)).toBe(0);
    expect(await page.textContent('h1')).toBe('Connect Notes to your AI assistant');
    expect(await page.textContent('#mcp-url')).toBe(`${host.url}/api/service/mcp`);
    const headings = await page.locator('h2').allTextContents();
    expect(headings).toEqual([
      'Claude',
      'ChatGPT',
      'Claude Code',
      'Cursor',
      'VS Code',
      'Any other MCP client',
    ]);
    const accent = await page.evaluate(() => getComputedStyle(document.querySelector('header')!).color);
    expect(accent).toBe('rgb(10, 125, 69)');
    expect(await page.textContent('body')).toContain(
      `claude mcp add --transport http notes ${host.url}/api/service/mcp`,
    );
    expect(await page.textContent('body')).toContain(
      'metadata document (an HTTPS client id) or by dynamic client registration',
    );
  });
});
