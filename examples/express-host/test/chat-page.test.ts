/**
 * The demo host's chat page, built as `pnpm start` builds it and clicked through in headless
 * Chromium as a person would: sign in through the form, type and send, watch replies stream,
 * answer approval cards, stop a turn, regenerate, reload in the middle of a turn, switch threads,
 * sign out. The page is the real bundle (React, `@ai-sdk/react`'s useChat) over the real wire;
 * only the model is the offline demo model.
 *
 * A screenshot of the page after an approval lands in `examples/express-host/test-results/`.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '@service/core/http';
import type { Store } from '@service/core/store';
import type { Browser, Locator, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHROMIUM_PATH,
  describeInBrowser,
  launchChromium,
} from '../../../packages/core/test/support/chromium.js';
import { type RunningHost, startExpressHost } from '../src/host.js';
import { type BundledHost, bundledHost } from './support/bundled-host.js';
import { startRelay } from './support/relay.js';

const ARTIFACTS = fileURLToPath(new URL('../test-results/', import.meta.url));

let bundled: BundledHost;
let store: Store;
let host: RunningHost;

beforeAll(async () => {
  bundled = await bundledHost('chat-ui-');
  ({ store, host } = bundled);
});
afterAll(async () => {
  await bundled?.close();
});

/** A sign-in token of `base`'s host (each host signs with a secret of its own). */
async function tokenOf(base: string, email: string): Promise<string> {
  const answer = await fetch(`${base}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  return ((await answer.json()) as { token: string }).token;
}

describe('the chat page over HTTP', () => {
  it('sends a signed-out visitor to the sign-in page, which comes back to the same thread', async () => {
    const answer = await fetch(`${host.url}/?thread=t1`, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    expect(answer.headers.get('location')).toBe(`/login?return_to=${encodeURIComponent('/?thread=t1')}`);
  });

  it('answers a signed-in browser the shell under a strict policy, with the user escaped', async () => {
    const answer = await fetch(`${host.url}/`, {
      headers: { cookie: `host_session=${await tokenOf(host.url, 'o"brien<b>@example.com')}` },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const policy = answer.headers.get('content-security-policy')!;
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self';");
    expect(policy).toContain("style-src 'self';");
    expect(policy).not.toContain('unsafe-inline');
    const html = await answer.text();
    expect(html).toContain('data-user="o&quot;brien&lt;b&gt;@example.com"');
    expect(html).not.toMatch(/<script>/);
    const script = /<script type="module" src="\/assets\/(chat-[\w-]+\.js)">/.exec(html)?.[1];
    const stylesheet = /<link rel="stylesheet" href="\/assets\/(chat-[\w-]+\.css)">/.exec(html)?.[1];
    expect(script && stylesheet).toBeTruthy();

    const js = await fetch(`${host.url}/assets/${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const css = await fetch(`${host.url}/assets/${stylesheet}`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('serves the orders page the same way, and the host’s orders API to the signed-in person only', async () => {
    const signedOut = await fetch(`${host.url}/orders`, { redirect: 'manual' });
    expect(signedOut.status).toBe(302);
    expect(signedOut.headers.get('location')).toBe(`/login?return_to=${encodeURIComponent('/orders')}`);
    const cookie = `host_session=${await tokenOf(host.url, 'bo@example.com')}`;
    const answer = await fetch(`${host.url}/orders`, { headers: { cookie } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-security-policy')).toContain("script-src 'self';");
    const html = await answer.text();
    expect(html).toContain('<div id="orders-root"');
    expect(html).toContain('data-orders="/api/orders"');
    expect(html).not.toMatch(/<script>/);
    // Each page links the others in its header; the review queue only for a reviewer.
    expect(linksOf(html)).toEqual([
      { href: '/', label: 'Chat' },
      { href: '/apps', label: 'Your apps' },
    ]);
    expect(linksOf(await (await fetch(`${host.url}/`, { headers: { cookie } })).text())).toEqual([
      { href: '/orders', label: 'Orders' },
      { href: '/apps', label: 'Your apps' },
    ]);
    const reviewer = `host_session=${await tokenOf(host.url, 'reviewer@example.com')}`;
    expect(linksOf(await (await fetch(`${host.url}/`, { headers: { cookie: reviewer } })).text())).toEqual([
      { href: '/orders', label: 'Orders' },
      { href: '/apps', label: 'Your apps' },
      { href: '/review', label: 'Review' },
    ]);
    for (const [path, root] of [
      ['/apps', 'apps-root'],
      ['/review', 'review-root'],
    ]) {
      const signedOutPage = await fetch(`${host.url}${path}`, { redirect: 'manual' });
      expect(signedOutPage.headers.get('location')).toBe(`/login?return_to=${encodeURIComponent(path!)}`);
      const shell = await fetch(`${host.url}${path}`, { headers: { cookie } });
      expect(shell.headers.get('content-security-policy')).toContain("script-src 'self';");
      expect(await shell.text()).toContain(`<div id="${root}"`);
    }

    expect((await fetch(`${host.url}/api/orders`)).status).toBe(401);
    const orders = await fetch(`${host.url}/api/orders`, { headers: { cookie } });
    expect(orders.headers.get('cache-control')).toBe('no-store');
    expect(await orders.json()).toMatchObject({ count: 2, orders: [{ id: 'A-1001' }, { id: 'A-1002' }] });
  });

  it('serves only the files the build names', async () => {
    for (const name of ['manifest.json', 'chat.js', '..%2Fpackage.json']) {
      const answer = await fetch(`${host.url}/assets/${name}`);
      expect(answer.status).toBe(404);
    }
  });

  it('says how to build the page when it is not built', async () => {
    const emptyDir = mkdtempSync(join(tmpdir(), 'chat-ui-none-'));
    const unbuilt = await startExpressHost({ store, logger: silentLogger, env: {}, chatAssetsDir: emptyDir });
    try {
      const answer = await fetch(`${unbuilt.url}/`, {
        headers: { authorization: `Bearer ${await tokenOf(unbuilt.url, 'ada@example.com')}` },
      });
      expect(answer.status).toBe(503);
      expect(await answer.text()).toContain('pnpm --filter @service/example-chat-ui build');
    } finally {
      await unbuilt.close();
      rmSync(emptyDir, { recursive: true, force: true });
    }
  });
});

describeInBrowser(`the chat page in headless Chromium (needs ${CHROMIUM_PATH})`, () => {
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1200, height: 800 } })).newPage();
    page.setDefaultTimeout(10_000);
  });
  afterAll(async () => {
    await browser?.close();
  });

  // Turns take their time on a loaded machine: wait up to the page's own timeout.
  const poll = <T>(actual: () => T) => expect.poll(actual, { timeout: 10_000 });
  const input = () => page.getByRole('textbox', { name: 'Message' });
  const answers = () => page.locator('.message-assistant');
  const lastAnswer = () => answers().last();
  const toolCard = (name: string) => lastAnswer().getByRole('region', { name: `Tool call ${name}` });
  const threadId = () => new URL(page.url()).searchParams.get('thread')!;

  async function send(text: string): Promise<void> {
    await input().fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  }

  async function newChat(): Promise<void> {
    const before = threadId();
    await page.getByRole('button', { name: 'New chat' }).click();
    await poll(threadId).not.toBe(before);
    await poll(() => answers().count()).toBe(0);
  }

  /** The thread's latest run as the wire records it, asked with the page's own cookie. */
  async function latestRun(): Promise<{ id: string; status: string } | undefined> {
    const answer = await page.request.get(`${host.url}/api/service/threads/${threadId()}`);
    if (!answer.ok()) return undefined;
    return (
      ((await answer.json()) as { thread: { latestRun: { id: string; status: string } | null } }).thread
        .latestRun ?? undefined
    );
  }

  /**
   * The person comes back to a tab. Headless Chromium shows every page at once and focuses each
   * (no tab is ever hidden or blurred), so the window's `focus` is fired as the browser fires it
   * when a window is focused again.
   */
  const comeBackTo = (tab: Page) => tab.evaluate(() => window.dispatchEvent(new Event('focus')));
  /** A tab shown again: the browser fires `visibilitychange`, then the window's `focus`. */
  const showAgain = (tab: Page) =>
    tab.evaluate(() => {
      document.dispatchEvent(new Event('visibilitychange'));
      window.dispatchEvent(new Event('focus'));
    });

  /** Characters of the last answer's text now. */
  const textLength = async (answer: Locator) =>
    (await answer.locator('.message-text').allTextContents()).join('').length;

  it('signs in through the form and lands on the chat page', async () => {
    await page.goto(`${host.url}/`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await poll(() => new URL(page.url()).pathname).toBe('/');
    await page.getByText('Signed in as ada@example.com').waitFor();
    expect(threadId()).toMatch(/^chat_[0-9a-f]{24}$/);
  });

  it('sends a typed message and shows the streamed reply', async () => {
    await send('hello there');
    await lastAnswer().getByText('You said: hello there.').waitFor();
    expect(await input().inputValue()).toBe('');
    await page
      .getByRole('navigation', { name: 'Threads' })
      .getByRole('button', { name: /hello there/ })
      .waitFor();
  });

  it('offers the keyboard a first stop that skips to the message box', async () => {
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to the message box' });
    expect(await skip.evaluate((link) => link === document.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    await poll(() => page.evaluate(() => document.activeElement?.id)).toBe('chat-input');
  });

  it('fits a 375 px wide phone: nothing scrolls sideways, Send and Sign out are on the screen', async () => {
    await page.setViewportSize({ width: 375, height: 740 });
    try {
      await input().waitFor();
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBe(375);
      for (const name of ['Send', 'Sign out']) {
        const box = (await page.getByRole('button', { name }).boundingBox())!;
        expect(box.x, name).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width, name).toBeLessThanOrEqual(375);
      }
    } finally {
      await page.setViewportSize({ width: 1200, height: 800 });
    }
  });

  it('shows a read tool as a card with its output', async () => {
    await newChat();
    await send('What are my orders?');
    const card = toolCard('list_orders');
    await card.getByText('Done', { exact: true }).waitFor();
    expect(await card.locator('pre').last().textContent()).toContain('A-1001');
    await lastAnswer()
      .getByText(/^Done\. The tool answered:/)
      .waitFor();
  });

  it('approves a destructive call from its approval card', async () => {
    await newChat();
    await send('cancel order A-1001');
    const card = toolCard('cancel_order');
    await card.getByText('Needs your approval').waitFor();
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'chat-page-approval.png') });
    // From the keyboard: the decision's buttons go, and the focus goes on to the message box.
    await card.getByRole('button', { name: 'Approve' }).focus();
    await page.keyboard.press('Enter');
    await card.getByText('Done', { exact: true }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('chat-input');
    expect(await card.locator('pre').last().textContent()).toContain('"status": "cancelled"');
    await lastAnswer()
      .getByText(/^Done\. The tool answered:/)
      .waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'chat-page.png') });
  });

  it('denies one, and the card says so', async () => {
    await newChat();
    await send('cancel order A-1002');
    const card = toolCard('cancel_order');
    await card.getByRole('button', { name: 'Deny' }).click();
    await card.getByText('Not run: the call was denied.').waitFor();
    await poll(async () => (await latestRun())?.status).toBe('completed');
    await poll(() => page.getByRole('button', { name: 'Send' }).count()).toBe(1);
  });

  it('keeps a message sent while an approval waits, and says to answer the approval first', async () => {
    await newChat();
    await send('cancel order A-1002');
    const card = toolCard('cancel_order');
    await card.getByText('Needs your approval').waitFor();
    await send('never mind');
    await page
      .getByRole('alert')
      .getByText('Answer the approval request first, then send again.', { exact: true })
      .waitFor();
    expect(await input().inputValue()).toBe('never mind');
    expect(await page.locator('.message-user').allTextContents()).toEqual(['Youcancel order A-1002']);
    await card.getByRole('button', { name: 'Deny' }).click();
    await card.getByText('Not run: the call was denied.').waitFor();
    await poll(async () => (await latestRun())?.status).toBe('completed');
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await page.getByRole('button', { name: 'Send' }).click();
    await lastAnswer().getByText('You said: never mind.').waitFor();
  });

  it('always allows a tool: approved now, and later calls run without asking', async () => {
    await newChat();
    await send('cancel order A-1002');
    await toolCard('cancel_order').getByRole('button', { name: 'Always allow' }).click();
    await toolCard('cancel_order').getByText('Done', { exact: true }).waitFor();
    await lastAnswer()
      .getByText(/^Done\. The tool answered:/)
      .waitFor();
    const grants = await (await page.request.get(`${host.url}/api/service/grants`)).json();
    expect(grants.grants).toMatchObject([{ tool: 'cancel_order' }]);

    await newChat();
    await send('cancel order A-1001');
    await toolCard('cancel_order').getByText('Done', { exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
  });

  it('stops a story with Stop: the text stops growing and the run ends cancelled', async () => {
    await newChat();
    await send('tell me a story');
    await poll(() => textLength(lastAnswer())).toBeGreaterThan(20);
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByRole('button', { name: 'Send' }).waitFor();
    // Stop gave way to Send: the focus is on the message box, not fallen to the page.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('chat-input');
    await poll(async () => (await latestRun())?.status).toBe('cancelled');
    const stopped = await textLength(lastAnswer());
    await page.waitForTimeout(1_000);
    expect(await textLength(lastAnswer())).toBe(stopped);
  });

  it('regenerates the last answer', async () => {
    await newChat();
    await send('hello again');
    await lastAnswer().getByText('You said: hello again.').waitFor();
    const first = await latestRun();
    await lastAnswer().getByRole('button', { name: 'Regenerate' }).click();
    await poll(async () => (await latestRun())?.id).not.toBe(first?.id);
    await poll(async () => (await latestRun())?.status).toBe('completed');
    await lastAnswer().getByText('You said: hello again.').waitFor();
    expect(await answers().count()).toBe(1);
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('resumes a turn still running after a reload', async () => {
    await newChat();
    await send('tell me a story');
    await poll(() => textLength(lastAnswer())).toBeGreaterThan(20);
    const thread = threadId();
    await page.reload();
    expect(threadId()).toBe(thread);
    await poll(() => textLength(lastAnswer())).toBeGreaterThan(0);
    const resumed = await textLength(lastAnswer());
    await poll(() => textLength(lastAnswer())).toBeGreaterThan(resumed);
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByRole('button', { name: 'Send' }).waitFor();
  });

  it('hands a message back when the server cannot be reached, to send again once online', async () => {
    await newChat();
    await page.context().setOffline(true);
    try {
      await send('sent while offline');
      await page
        .getByRole('alert')
        .getByText('Could not reach the server. Check your connection, then send again.', { exact: true })
        .waitFor();
      expect(await page.locator('.message-user').count()).toBe(0);
      expect(await input().inputValue()).toBe('sent while offline');
    } finally {
      await page.context().setOffline(false);
    }
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await page.getByRole('button', { name: 'Send' }).click();
    await lastAnswer().getByText('You said: sent while offline.').waitFor();
    expect(await page.locator('.message-user').allTextContents()).toEqual(['Yousent while offline']);
    expect(await input().inputValue()).toBe('');
  });

  it('picks a reply cut off by the network up where the turn is, once the server answers again', async () => {
    // The page goes through a relay whose connections the test cuts, as a network would.
    const relay = await startRelay(new URL(host.url));
    try {
      await page.goto(`${relay.url}/`);
      await newChat();
      await send('tell me a story');
      await poll(() => textLength(lastAnswer())).toBeGreaterThan(20);
      relay.refuse(true);
      relay.cut();
      await page
        .getByRole('status')
        .getByText('The connection dropped. Reconnecting to the reply…')
        .waitFor();
      const cut = await textLength(lastAnswer());
      expect((await latestRun())?.status).toBe('running');
      expect(await page.getByRole('alert').count()).toBe(0);
      relay.refuse(false);
      await poll(() => textLength(lastAnswer())).toBeGreaterThan(cut);
      await poll(async () => page.getByRole('status').count()).toBe(0);
      expect(await page.getByRole('alert').count()).toBe(0);
      // One reply, its opening written once: the replayed turn takes the cut reply's place.
      expect(await answers().count()).toBe(1);
      const text = (await lastAnswer().locator('.message-text').allTextContents()).join('');
      expect(text.indexOf(text.slice(0, 20), 1)).toBe(-1);
      // Still the same run streaming, and stoppable as any.
      await page.getByRole('button', { name: 'Stop' }).click();
      await page.getByRole('button', { name: 'Send' }).waitFor();
      await poll(async () => (await latestRun())?.status).toBe('cancelled');
    } finally {
      await relay.close();
      await page.goto(`${host.url}/`);
    }
  });

  it('joins the turn another tab is running on the thread instead of failing the send', async () => {
    await newChat();
    await send('hello from the first tab');
    await lastAnswer().getByText('You said: hello from the first tab.').waitFor();
    const other = await page.context().newPage();
    try {
      other.setDefaultTimeout(10_000);
      await other.goto(page.url());
      await other.locator('.message-assistant').getByText('You said: hello from the first tab.').waitFor();
      await send('tell me a story');
      await poll(() => textLength(lastAnswer())).toBeGreaterThan(20);

      await other.getByRole('textbox', { name: 'Message' }).fill('and one more thing');
      await other.getByRole('button', { name: 'Send' }).click();
      await other.getByRole('button', { name: 'Stop' }).waitFor();
      const joined = other.locator('.message-assistant').last();
      await poll(() => textLength(joined)).toBeGreaterThan(0);
      const seen = await textLength(joined);
      await poll(() => textLength(joined)).toBeGreaterThan(seen);
      expect(await other.locator('.message-user').allTextContents()).toEqual([
        'Youhello from the first tab',
        'Youtell me a story',
      ]);
      expect(await other.getByRole('textbox', { name: 'Message' }).inputValue()).toBe('and one more thing');
      expect(await other.getByRole('alert').count()).toBe(0);

      await other.getByRole('button', { name: 'Stop' }).click();
      await other.getByRole('button', { name: 'Send' }).click();
      await other.locator('.message-assistant').last().getByText('You said: and one more thing.').waitFor();
    } finally {
      await other.close();
    }
  });

  it('follows a turn run from another tab once the person comes back to this one', async () => {
    await newChat();
    await send('hello from the first tab');
    await lastAnswer().getByText('You said: hello from the first tab.').waitFor();
    const other = await page.context().newPage();
    const streamRequests: string[] = [];
    const onRequest = (request: Request) => {
      if (request.url().includes('/stream')) streamRequests.push(request.url());
    };
    page.on('request', onRequest);
    try {
      other.setDefaultTimeout(10_000);
      await other.goto(page.url());
      const otherAnswers = other.locator('.message-assistant');
      await otherAnswers.getByText('You said: hello from the first tab.').waitFor();

      await send('tell me a story');
      await poll(() => textLength(lastAnswer())).toBeGreaterThan(20);
      // The other tab, idle and in the background, shows the thread as it was.
      expect(await otherAnswers.count()).toBe(1);

      const otherAsked: string[] = [];
      other.on('request', (request) => otherAsked.push(new URL(request.url()).pathname));
      await showAgain(other);
      await poll(() => other.locator('.message-user').allTextContents()).toEqual([
        'Youhello from the first tab',
        'Youtell me a story',
      ]);
      const joined = otherAnswers.last();
      await poll(() => textLength(joined)).toBeGreaterThan(0);
      const seen = await textLength(joined);
      await poll(() => textLength(joined)).toBeGreaterThan(seen);
      await other.getByRole('button', { name: 'Stop' }).waitFor();
      expect(await other.getByRole('alert').count()).toBe(0);
      // Both of the browser's events, one look: the thread read once, its turn joined once.
      const thread = `/api/service/threads/${threadId()}`;
      expect(otherAsked.filter((path) => path === thread || path.endsWith('/stream'))).toEqual([
        thread,
        `/api/service/chat/${threadId()}/stream`,
      ]);

      // Stopped from this tab; the other shows the turn's end when it is looked at again.
      await page.getByRole('button', { name: 'Stop' }).click();
      await poll(async () => (await latestRun())?.status).toBe('cancelled');
      await comeBackTo(other);
      await other.getByRole('button', { name: 'Send' }).waitFor();
      // Back on the tab that ran the turn: it shows the thread as stored, and asks for no stream.
      await comeBackTo(page);
      await page.getByRole('button', { name: 'Send' }).waitFor();
      expect(await answers().count()).toBe(2);
      expect(await textLength(otherAnswers.last())).toBe(await textLength(lastAnswer()));
      expect(streamRequests).toEqual([]);

      // A chat started in this tab is listed in the other once the person comes back to it.
      await newChat();
      await send('a chat of the first tab');
      await lastAnswer().getByText('You said: a chat of the first tab.').waitFor();
      const listed = other
        .getByRole('navigation', { name: 'Threads' })
        .getByRole('button', { name: /a chat of the first tab/ });
      expect(await listed.count()).toBe(0);
      await comeBackTo(other);
      await listed.waitFor();
    } finally {
      page.off('request', onRequest);
      await other.close();
    }
  });

  it('shows odd input as typed: markup as text, emoji, right-to-left lines running right to left', async () => {
    await newChat();
    const markup =
      '<script>window.__injected = 1</script><img src=x onerror="window.__injected = 2"> <b>bold</b>';
    await send(markup);
    await lastAnswer()
      .getByText(/^You said: <script>/)
      .waitFor();
    expect(await page.locator('.message-user .message-text').last().textContent()).toBe(markup);
    expect(await page.locator('.message-user b, .message-user img, .message-user script').count()).toBe(0);
    expect(await page.evaluate(() => (window as { __injected?: number }).__injected)).toBeUndefined();

    const hebrew = 'שלום עולם! 👋';
    await input().fill(hebrew);
    expect(await input().evaluate((element) => getComputedStyle(element).direction)).toBe('rtl');
    await page.getByRole('button', { name: 'Send' }).click();
    await lastAnswer().getByText(`You said: ${hebrew}.`, { exact: false }).waitFor();
    const sent = page.locator('.message-user .message-text').last();
    expect(await sent.textContent()).toBe(hebrew);
    expect(await sent.evaluate((element) => getComputedStyle(element).direction)).toBe('rtl');
    const english = lastAnswer().locator('.message-text').last();
    expect(await english.evaluate((element) => getComputedStyle(element).direction)).toBe('ltr');
  });

  it('opens a new chat without asking the server for a thread it cannot have yet', async () => {
    const failures: string[] = [];
    const onResponse = (answer: { status(): number; url(): string }) => {
      if (answer.status() >= 400) failures.push(`${answer.status()} ${answer.url()}`);
    };
    const onConsole = (message: { type(): string; text(): string }) => {
      if (message.type() === 'error') failures.push(message.text());
    };
    page.on('response', onResponse);
    page.on('console', onConsole);
    try {
      await newChat();
      await send('a fresh start');
      await lastAnswer().getByText('You said: a fresh start.').waitFor();
      await page.getByRole('button', { name: 'New chat' }).click();
      await page.getByRole('button', { name: /a fresh start/ }).click();
      await lastAnswer().getByText('You said: a fresh start.').waitFor();
      expect(failures).toEqual([]);
    } finally {
      page.off('response', onResponse);
      page.off('console', onConsole);
    }
  });

  it('lists the threads and switches between them (and back)', async () => {
    const threads = page.getByRole('navigation', { name: 'Threads' });
    await threads.getByRole('button', { name: /What are my orders\?/ }).click();
    await toolCard('list_orders').getByText('Done', { exact: true }).waitFor();
    const ordersThread = threadId();
    await threads.getByRole('button', { name: /hello there/ }).click();
    await lastAnswer().getByText('You said: hello there.').waitFor();
    expect(threadId()).not.toBe(ordersThread);
    await page.goBack();
    await poll(threadId).toBe(ordersThread);
    await toolCard('list_orders').waitFor();
  });

  it('shows the wire’s error message inline', async () => {
    await page.context().clearCookies();
    await send('anyone there?');
    await page
      .getByRole('alert')
      .getByText('Sign in required: no user is signed in for this request.', { exact: true })
      .waitFor();
  });

  it('signs out with the Sign out button', async () => {
    await page.goto(`${host.url}/`);
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await poll(() => new URL(page.url()).pathname).toBe('/login');
    expect((await page.context().cookies()).find((c) => c.name === 'host_session')).toBeUndefined();
  });
});

/** The header links a page shell hands its bundle (`data-links`, escaped JSON). */
function linksOf(html: string): Array<{ href: string; label: string }> {
  const attribute = /data-links="([^"]*)"/.exec(html)?.[1] ?? '[]';
  return JSON.parse(attribute.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&amp;', '&'));
}
