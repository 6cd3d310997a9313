/**
 * The dashboard's frame and home page, in headless Chromium against a real platform on loopback:
 * signing in by clicking, the balance and its live update, the spend chart drawn from the usage
 * API, the strict CSP, accessibility, and a hostile workspace name shown as text.
 */

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection } from '../../src/connections/service.js';
import { describeInBrowser, HAS_CHROMIUM, launchChromium } from '../support/chromium.js';
import { type FakeUpstream, startFakeUpstream } from '../support/fake-upstream.js';
import { seedProviders } from '../support/metered.js';
import {
  type RunningPlatform,
  signedInOwner,
  signedInTeammate,
  startPlatformAtOwnUrl,
} from '../support/platform.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import {
  collectPageProblems,
  ensureDashboardBuilt,
  expectAccessible,
  postForm,
  screenshot,
  signInByClicking,
} from './support.js';

let store: TestStore;
let server: RunningPlatform;
let browser: Browser;
let upstream: FakeUpstream;

beforeAll(async () => {
  ensureDashboardBuilt();
  store = await openTestStore();
  upstream = await startFakeUpstream();
  server = await startPlatformAtOwnUrl(store, { dashboard: { livePollMs: 100 } });
  await seedProviders(server.platform, upstream.url);
  if (HAS_CHROMIUM) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await upstream?.close();
  await store?.dispose();
});

const userOf = async (email: string) =>
  store.db
    .selectFrom('users')
    .select(['id', 'default_tenant_id'])
    .where('email', '=', email)
    .executeTakeFirstOrThrow();

describe('the dashboard over HTTP', () => {
  it('sends a signed-out visitor to sign in, and back to the page they asked for', async () => {
    const home = await fetch(`${server.url}/`, { redirect: 'manual' });
    expect(home.status).toBe(303);
    expect(home.headers.get('location')).toBe('/sign-in?return_to=%2F');
    // A deep link keeps its query through sign-in.
    const deep = await fetch(`${server.url}/billing?purchase=p1`, { redirect: 'manual' });
    expect(deep.headers.get('location')).toBe('/sign-in?return_to=%2Fbilling%3Fpurchase%3Dp1');
    const signIn = await fetch(`${server.url}/sign-in?return_to=%2Fsettings`);
    expect(signIn.status).toBe(200);
    const page = await signIn.text();
    expect(page).toContain('href="/auth/v1/sign-in?return_to=%2Fsettings"');
  });

  it('never sends sign-in back to another site', async () => {
    for (const returnTo of [
      'https://evil.example',
      '//evil.example',
      '/\\evil.example',
      '/./\\evil.example',
      '/..//evil.example',
      'javascript:alert(1)',
    ]) {
      const page = await (
        await fetch(`${server.url}/sign-in?${new URLSearchParams({ return_to: returnTo })}`)
      ).text();
      expect(page).toContain('return_to=%2F"');
    }
  });

  it('answers pages with a strict CSP: its own script and styles, no inline script, never framed', async () => {
    const owner = await signedInOwner(server, 'csp@example.test');
    const response = await fetch(`${server.url}/`, { headers: { cookie: owner.cookie } });
    expect(response.status).toBe(200);
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    const body = await response.text();
    expect(body).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(body).not.toMatch(/\sstyle=/);
  });

  it('serves its script and stylesheet long-cached, with a version in their URLs', async () => {
    const owner = await signedInOwner(server, 'assets@example.test');
    const body = await (await fetch(`${server.url}/`, { headers: { cookie: owner.cookie } })).text();
    const src = /src="(\/static\/dashboard\/dashboard\.js\?v=[\w-]+)"/.exec(body)![1]!;
    const script = await fetch(`${server.url}${src}`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('text/javascript');
    expect(script.headers.get('cache-control')).toContain('immutable');
    const again = await fetch(`${server.url}${src}`, {
      headers: { 'if-none-match': script.headers.get('etag')! },
    });
    expect(again.status).toBe(304);
    expect((await fetch(`${server.url}/static/dashboard/..%2Fpackage.json`)).status).toBe(404);
  });

  it('refuses a form post without the CSRF token, or from another origin', async () => {
    const owner = await signedInOwner(server, 'csrf@example.test');
    const signOut = (headers: Record<string, string>, body: string) =>
      fetch(`${server.url}/sign-out`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: owner.cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body,
      });
    expect((await signOut({}, '_csrf=forged')).headers.get('location')).toBe('/');
    const page = await (await fetch(`${server.url}/`, { headers: { cookie: owner.cookie } })).text();
    const token = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    expect(
      (await signOut({ origin: 'https://evil.example' }, `_csrf=${token}`)).headers.get('location'),
    ).toBe('/');
    // Still signed in after both.
    expect(
      (await fetch(`${server.url}/`, { headers: { cookie: owner.cookie }, redirect: 'manual' })).status,
    ).toBe(200);
    expect((await signOut({ origin: server.url }, `_csrf=${token}`)).headers.get('location')).toBe(
      '/sign-in',
    );
    expect(
      (await fetch(`${server.url}/`, { headers: { cookie: owner.cookie }, redirect: 'manual' })).status,
    ).toBe(303);
  });

  it('streams the balance live to a signed-in user, and refuses anyone else', async () => {
    expect((await fetch(`${server.url}/dashboard/live`)).status).toBe(401);
    const owner = await signedInOwner(server, 'live@example.test');
    const controller = new AbortController();
    const response = await fetch(`${server.url}/dashboard/live`, {
      headers: { cookie: owner.cookie },
      signal: controller.signal,
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('event: connections')) text += (await reader.read()).value ?? '';
    expect(text).toContain('event: balance\ndata: {"micros":0,"formatted":"USD 0.00"}');
    text = '';
    await grant(owner.tenantId, 2_000_000);
    while (!text.includes('event: balance')) text += (await reader.read()).value ?? '';
    expect(text).toContain('data: {"micros":2000000,"formatted":"USD 2.00"}');
    controller.abort();
  });
});

describe('the live stream of someone who may no longer see it', () => {
  /** Opens the stream as `cookie` and reads until its first balance. */
  const openStream = async (cookie: string) => {
    const response = await fetch(`${server.url}/dashboard/live`, { headers: { cookie } });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('event: balance')) text += (await reader.read()).value ?? '';
    return reader;
  };
  /** What the stream sends until it ends, or `still open` when it has not within 3 s. */
  const untilEnded = async (reader: ReadableStreamDefaultReader<string>) => {
    let text = '';
    let open = false;
    const timer = setTimeout(() => {
      open = true;
      void reader.cancel();
    }, 3000);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += value;
    }
    clearTimeout(timer);
    return open ? `${text}still open` : text;
  };

  it('ends once its member is removed from the workspace, sending nothing more', async () => {
    const owner = await signedInOwner(server, 'live-owner@example.test');
    const member = await signedInTeammate(server, owner.tenantId, 'member', 'live-member@example.test');
    const reader = await openStream(member);
    const { id } = await userOf('live-member@example.test');
    await store.db
      .deleteFrom('memberships')
      .where('tenant_id', '=', owner.tenantId)
      .where('user_id', '=', id)
      .execute();
    const ended = untilEnded(reader);
    await grant(owner.tenantId, 3_000_000);
    const sent = await ended;
    expect(sent).not.toContain('3000000');
    expect(sent).not.toContain('still open');
  });

  it('ends once its session is signed out in another tab', async () => {
    const owner = await signedInOwner(server, 'live-signout@example.test');
    const reader = await openStream(owner.cookie);
    const page = await (await fetch(`${server.url}/`, { headers: { cookie: owner.cookie } })).text();
    const token = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const signedOut = await postForm(server.url, owner.cookie, '/sign-out', { _csrf: token });
    expect(signedOut.headers.get('location')).toBe('/sign-in');
    const ended = untilEnded(reader);
    await grant(owner.tenantId, 4_000_000);
    const sent = await ended;
    expect(sent).not.toContain('4000000');
    expect(sent).not.toContain('still open');
  });
});

describe('the live stream on a stopping platform', () => {
  it('ends at once, so a shutdown never waits for an open dashboard', async () => {
    const own = await openTestStore();
    const stopping = await startPlatformAtOwnUrl(own, { dashboard: { livePollMs: 100 } });
    try {
      const owner = await signedInOwner(stopping, 'stopping@example.test');
      const response = await fetch(`${stopping.url}/dashboard/live`, { headers: { cookie: owner.cookie } });
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      while (!text.includes('event: balance')) text += (await reader.read()).value ?? '';
      const started = Date.now();
      const closed = stopping.platform.close();
      for (;;) if ((await reader.read()).done) break;
      await closed;
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await stopping.close().catch(() => {});
      await own.dispose();
    }
  });
});

describeInBrowser('the dashboard in a browser', () => {
  it('signs in by clicking, shows the balance live, draws the spend chart, and passes axe', async () => {
    const email = 'home@example.test';
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems = collectPageProblems(page);
    await signInByClicking(page, server, email);
    expect(await page.textContent('[data-live="balance"]')).toBe('USD 0.00');
    // Nothing spent: the burn rate says so, and projects no runway.
    const burnLine = () => page.locator('#burn-title ~ p.muted').textContent();
    expect(await burnLine()).toBe('USD 0.00 in the last 24 hours');
    await expectAccessible(page);
    await screenshot(page, 'home-empty');

    const user = await userOf(email);
    await grant(user.default_tenant_id!, 3_500_000);
    await page.waitForFunction(
      () => document.querySelector('[data-live="balance"]')?.textContent === 'USD 3.50',
    );

    // A real metered call through the proxy: the reloaded page charts it by provider.
    const tenantId = user.default_tenant_id!;
    const app = await store.db
      .insertInto('apps')
      .values({ tenant_id: tenantId, slug: 'tool', name: 'Tool' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const services = server.platform.context;
    await createConnection(
      { db: store.db, sealer: services.sealer, keys: services.keys },
      { tenantId, provider: 'search', appId: app.id },
    );
    const appKey = await services.keys.issue({ tenantId, kind: 'app', appId: app.id });
    const search = await fetch(`${server.url}/proxy/search/search?q=x`, {
      headers: { 'x-api-key': appKey.key },
    });
    expect(search.status).toBe(200);
    await page.reload();
    await page.waitForSelector('#spend-chart[data-drawn="true"] canvas');
    const today = new Date().toISOString().slice(0, 10);
    const row = page.locator('.chart tbody tr', { has: page.locator(`th:text-is("${today}")`) });
    expect(await row.locator('td').allTextContents()).toEqual(['USD 0.0012']);
    expect(await page.locator('.chart thead th').allTextContents()).toEqual(['Date', 'search']);
    // A day's spend projects how long the balance lasts at that rate.
    expect(await burnLine()).toMatch(/^USD 0\.0012 in the last 24 hours · runway about \d+ days$/);
    await expectAccessible(page);
    await screenshot(page, 'home');
    expect(problems.join('\n')).toBe('');
    await context.close();
  }, 60_000);
});

async function grant(tenantId: string, amountMicros: number): Promise<void> {
  await server.platform.context.operators.grant({ tenantId, amountMicros, operator: 'test', reason: null });
}
