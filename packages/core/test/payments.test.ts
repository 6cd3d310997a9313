/**
 * Adding credit without Stripe, over real HTTP (on PGlite, and Postgres when `DATABASE_URL` is
 * set): a new user signs in and buys a pack through the development processor in headless
 * Chromium, spends some of it on a metered call, and sees both in the billing history;
 * confirmations replayed or raced post once; production refuses the development processor; bad
 * input gets a 4xx.
 *
 * @see docs/api/payments.md
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection } from '../src/connections/service.js';
import { csrfTokenFor } from '../src/platform/cli/bootstrap.js';
import type { MembershipRole } from '../src/store/database.js';
import { contextWithCookie, HAS_CHROMIUM, itInBrowser, launchChromium } from './support/chromium.js';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { seedProviders } from './support/metered.js';
import {
  type RunningPlatform,
  sessionClient,
  signedInOwner,
  signedInTeammate,
  startPlatformAtOwnUrl,
} from './support/platform.js';
import { openTestStore, STORE_KINDS, type TestStore } from './support/stores.js';

/** A search costs 1000 micros plus the 20 % margin. */
const SEARCH_COST = 1200;
const USD = 1_000_000;

for (const kind of STORE_KINDS) {
  describe(`payments, dev processor (${kind})`, () => {
    let store: TestStore;
    let server: RunningPlatform;
    let upstream: FakeUpstream;
    let browser: Browser;
    let emails = 0;

    beforeAll(async () => {
      store = await openTestStore(kind);
      upstream = await startFakeUpstream();
      server = await startPlatformAtOwnUrl(store);
      await seedProviders(server.platform, upstream.url);
      if (HAS_CHROMIUM) browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
      await server?.close();
      await upstream?.close();
      await store?.dispose();
    });

    const owner = () => signedInOwner(server, `buyer-${++emails}-${kind}@example.test`);
    const api = sessionClient(() => server.url);
    const balanceOf = async (tenantId: string) =>
      (
        await store.db
          .selectFrom('wallets')
          .select('balance_micros')
          .where('tenant_id', '=', tenantId)
          .executeTakeFirst()
      )?.balance_micros ?? 0;
    const ledgerOf = (tenantId: string) =>
      store.db.selectFrom('ledger_entries').selectAll().where('tenant_id', '=', tenantId).execute();
    /** The session's CSRF token, as the confirmation page carries it. */
    const csrfOf = async (cookie: string, path: string) => {
      const html = await (await api(cookie, 'GET', path)).text();
      return /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
    };
    /** Confirms a purchase the way its page's form does. */
    const confirm = (cookie: string, path: string, csrf: string, origin = server.url) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf_token: csrf }).toString(),
      });
    const startPurchase = async (cookie: string, body: unknown) => {
      const response = await api(cookie, 'POST', '/api/billing/purchase', body);
      expect(response.status).toBe(200);
      const { url } = (await response.json()) as { url: string };
      expect(url.startsWith(`${server.url}/billing/purchases/`)).toBe(true);
      return new URL(url).pathname;
    };
    const teammate = (tenantId: string, role: MembershipRole) =>
      signedInTeammate(server, tenantId, role, `${role}-${++emails}-${kind}@example.test`);

    itInBrowser(
      'a new user signs in, buys a pack in the browser, makes a metered call and sees both in transactions',
      async () => {
        const context = await browser.newContext();
        try {
          const page = await context.newPage();
          // top_up_url is a page: signed out, it offers the sign-in page, which comes back to it.
          const balance = await fetch(`${server.url}/api/billing/balance`, {
            headers: { authorization: `Bearer ${(await owner()).appKey}` },
          });
          const topUpUrl = ((await balance.json()) as { top_up_url: string }).top_up_url;
          expect(topUpUrl).toBe(`${server.url}/billing`);
          // Signed out, the dashboard's billing page sends the browser to sign in, and back.
          await page.goto(topUpUrl);
          expect(page.url()).toBe(`${server.url}/sign-in?return_to=%2Fbilling`);
          await Promise.all([
            page.waitForURL(/\/auth\/v1\/sign-in/),
            page.click('main a:has-text("Sign in")'),
          ]);
          await page.fill('#email', `new-buyer-${kind}@example.test`);
          await Promise.all([page.waitForURL(topUpUrl), page.click('button[type=submit]')]);
          expect(await page.textContent('#balance')).toBe('USD 0.00');

          await Promise.all([page.waitForURL(/\/billing\/purchases\//), page.click('#pack-25')]);
          expect(await page.textContent('#amount')).toBe('USD 25.00');
          await Promise.all([page.waitForURL(/\/billing\?purchase=/), page.click('#confirm')]);
          expect(await page.textContent('#completed')).toBe('Added USD 25.00 of credit.');
          expect(await page.textContent('#balance')).toBe('USD 25.00');

          // The workspace the browser signed in to makes a metered call with an App Key of its app.
          const cookie = (await context.cookies(server.url)).map((c) => `${c.name}=${c.value}`).join('; ');
          const user = await store.db
            .selectFrom('users')
            .select('default_tenant_id')
            .where('email', '=', `new-buyer-${kind}@example.test`)
            .executeTakeFirstOrThrow();
          const tenantId = user.default_tenant_id!;
          const app = await store.db
            .insertInto('apps')
            .values({ tenant_id: tenantId, slug: 'tool', name: 'Tool' })
            .returning('id')
            .executeTakeFirstOrThrow();
          const { db, context: services } = { db: store.db, context: server.platform.context };
          await createConnection(
            { db, sealer: services.sealer, keys: services.keys },
            { tenantId, provider: 'search', appId: app.id },
          );
          const appKey = await services.keys.issue({ tenantId, kind: 'app', appId: app.id });
          const search = await fetch(`${server.url}/proxy/search/search?q=x`, {
            headers: { 'x-api-key': appKey.key },
          });
          expect(search.status).toBe(200);

          const listed = await api(cookie, 'GET', '/api/billing/transactions');
          expect(listed.status).toBe(200);
          expect(listed.headers.get('cache-control')).toBe('no-store');
          const { transactions, nextCursor } = (await listed.json()) as {
            transactions: Array<{
              kind: string;
              amountMicros: number;
              balanceAfterMicros: number;
              createdAt: string;
            }>;
            nextCursor: string | null;
          };
          expect(
            transactions.map(({ kind, amountMicros, balanceAfterMicros }) => ({
              kind,
              amountMicros,
              balanceAfterMicros,
            })),
          ).toEqual([
            { kind: 'usage', amountMicros: -SEARCH_COST, balanceAfterMicros: 25 * USD - SEARCH_COST },
            { kind: 'purchase', amountMicros: 25 * USD, balanceAfterMicros: 25 * USD },
          ]);
          expect(Date.parse(transactions[0]!.createdAt)).not.toBeNaN();
          expect(nextCursor).toBeNull();
        } finally {
          await context.close();
        }
      },
    );

    it('posts a replayed confirmation once, and a confirmed purchase page leads to its result', async () => {
      const ws = await owner();
      const path = await startPurchase(ws.cookie, { pack: 5 });
      const csrf = await csrfOf(ws.cookie, path);
      for (let i = 0; i < 3; i++) {
        const response = await confirm(ws.cookie, path, csrf);
        expect(response.status).toBe(303);
        expect(response.headers.get('location')).toBe(
          `${server.url}/billing?purchase=${path.split('/').at(-1)}`,
        );
      }
      expect(await balanceOf(ws.tenantId)).toBe(5 * USD);
      expect((await ledgerOf(ws.tenantId)).map((e) => e.kind)).toEqual(['purchase']);
      const again = await api(ws.cookie, 'GET', path);
      expect(again.status).toBe(303);
      const result = await (
        await api(ws.cookie, 'GET', again.headers.get('location')!.slice(server.url.length))
      ).text();
      expect(result).toContain('Added USD 5.00 of credit.');
      expect(result).toContain(
        'id="balance" data-live="balance" data-micros="5000000" aria-live="polite">USD 5.00</p>',
      );
    });

    it('posts once when ten confirmations of one purchase race', async () => {
      const ws = await owner();
      const path = await startPurchase(ws.cookie, { amountUsd: 12.5 });
      const csrf = await csrfOf(ws.cookie, path);
      const statuses = await Promise.all(
        Array.from({ length: 10 }, () => confirm(ws.cookie, path, csrf).then((r) => r.status)),
      );
      expect(statuses).toEqual(Array(10).fill(303));
      expect(await balanceOf(ws.tenantId)).toBe(12.5 * USD);
      const entries = await ledgerOf(ws.tenantId);
      expect(entries).toHaveLength(1);
      const purchase = await store.db
        .selectFrom('purchases')
        .selectAll()
        .where('tenant_id', '=', ws.tenantId)
        .executeTakeFirstOrThrow();
      expect(purchase.ledger_entry_id).toBe(entries[0]!.id);
      expect(purchase.completed_at).toBeInstanceOf(Date);
    });

    it('refuses a confirmation without the session CSRF token, from another origin, or by another workspace', async () => {
      const ws = await owner();
      const path = await startPurchase(ws.cookie, { pack: 100 });
      const csrf = await csrfOf(ws.cookie, path);
      expect((await confirm(ws.cookie, path, 'forged')).status).toBe(403);
      // The CLI login form's token of the same session is not this form's.
      const cliToken = csrfTokenFor(ws.cookie.slice(ws.cookie.indexOf('=') + 1));
      expect((await confirm(ws.cookie, path, cliToken)).status).toBe(403);
      expect((await confirm(ws.cookie, path, csrf, 'https://evil.example')).status).toBe(403);
      const stranger = await owner();
      const strangerCsrf = await csrfOf(stranger.cookie, '/billing');
      expect((await confirm(stranger.cookie, path, strangerCsrf)).status).toBe(404);
      expect((await api(stranger.cookie, 'GET', path)).status).toBe(404);
      expect((await api(ws.cookie, 'GET', '/billing/purchases/not-a-uuid')).status).toBe(404);
      expect((await confirm('', path, csrf)).status).toBe(401);
      expect(await balanceOf(ws.tenantId)).toBe(0);
      expect(await balanceOf(stranger.tenantId)).toBe(0);
    });

    it('starts a purchase from the /billing page form, and refuses a pack that is not offered', async () => {
      const ws = await owner();
      const csrf = await csrfOf(ws.cookie, '/billing');
      const form = (fields: Record<string, string>) =>
        fetch(`${server.url}/billing/purchase`, {
          method: 'POST',
          redirect: 'manual',
          headers: {
            cookie: ws.cookie,
            origin: server.url,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: new URLSearchParams(fields).toString(),
        });
      const started = await form({ pack: '25', csrf_token: csrf });
      expect(started.status).toBe(303);
      expect(started.headers.get('location')).toMatch(
        new RegExp(`^${server.url}/billing/purchases/[0-9a-f-]{36}$`),
      );
      expect((await form({ pack: '7', csrf_token: csrf })).status).toBe(400);
      expect((await form({ pack: '25', csrf_token: 'forged' })).status).toBe(403);
    });

    it('lets only owners buy and read the history; others are told so', async () => {
      const ws = await owner();
      for (const role of ['member', 'viewer'] as const) {
        const cookie = await teammate(ws.tenantId, role);
        expect((await api(cookie, 'POST', '/api/billing/purchase', { pack: 5 })).status).toBe(403);
        expect((await api(cookie, 'GET', '/api/billing/transactions')).status).toBe(403);
        expect((await api(cookie, 'POST', '/api/billing/settle', {})).status).toBe(403);
        const billing = await api(cookie, 'GET', '/billing');
        expect(billing.status).toBe(403);
        expect(await billing.text()).toContain('owners see and change billing');
      }
      for (const [method, path] of [
        ['POST', '/api/billing/purchase'],
        ['GET', '/api/billing/transactions'],
        ['POST', '/api/billing/settle'],
      ] as const) {
        const response = await api('', method, path, method === 'POST' ? {} : undefined);
        expect(response.status).toBe(401);
        expect(await response.json()).toEqual({ message: 'Unauthorized' });
      }
    });

    it('answers bad input with a 4xx', async () => {
      const ws = await owner();
      for (const [body, names] of [
        [{ pack: 7 }, /pack/],
        [{ pack: '25' }, /pack/],
        [{ amountUsd: 0.5 }, /amountUsd/],
        [{ amountUsd: 1000.01 }, /amountUsd/],
        [{ amountUsd: 10.001 }, /amountUsd/],
        [{ amountUsd: 12.3400000001 }, /amountUsd/],
        [{ amountUsd: 999.999999999 }, /amountUsd/],
        [{ amountUsd: '5' }, /amountUsd/],
        [{ amountUsd: 5, pack: 5 }, /pack or amountUsd/],
        [{ amount_usd: 5 }, /amount_usd/],
        [{}, /pack or amountUsd/],
        [[], /./],
        ['not json', /./],
      ] as const) {
        const response = await api(ws.cookie, 'POST', '/api/billing/purchase', body);
        expect(response.status, JSON.stringify(body)).toBe(400);
        // Refusals too are never kept by a cache, as every answer of these routes.
        expect(response.headers.get('cache-control'), JSON.stringify(body)).toBe('no-store');
        const refusal = await response.json();
        expect(refusal.code).toBe('INVALID_REQUEST');
        expect(refusal.message, JSON.stringify(body)).toMatch(names);
      }
      // Whole cents that binary floating point cannot hold exactly are whole cents all the same.
      for (const amountUsd of [0.29 + 1, 12.34, 1000]) {
        expect((await api(ws.cookie, 'POST', '/api/billing/purchase', { amountUsd })).status).toBe(200);
      }
      expect(
        (await api(ws.cookie, 'POST', '/api/billing/purchase', { pack: 5 }, { 'content-type': 'text/plain' }))
          .status,
      ).toBe(415);
      expect(
        (
          await api(
            ws.cookie,
            'POST',
            '/api/billing/purchase',
            { pack: 5 },
            { origin: 'https://evil.example' },
          )
        ).status,
      ).toBe(403);
      for (const query of [
        'limit=0',
        'limit=201',
        'limit=x',
        'cursor=abc',
        'cursor=0',
        'cursor=99999999999999999999',
      ]) {
        const refused = await api(ws.cookie, 'GET', `/api/billing/transactions?${query}`);
        expect(refused.status, query).toBe(400);
        expect(refused.headers.get('cache-control'), query).toBe('no-store');
      }
      expect((await api(ws.cookie, 'POST', '/api/billing/settle', { now: true })).status).toBe(400);
      expect(await ledgerOf(ws.tenantId)).toEqual([]);
    });

    itInBrowser(
      'renders a hostile workspace name as text, with the strict page headers, and refuses an oversized form',
      async () => {
        const ws = await owner();
        const hostile = '<b id="injected">x</b><img src=x>';
        await store.db.updateTable('tenants').set({ name: hostile }).where('id', '=', ws.tenantId).execute();
        const path = await startPurchase(ws.cookie, { pack: 5 });
        const context = await contextWithCookie(browser, server.url, ws.cookie);
        try {
          const page = await context.newPage();
          for (const target of ['/billing', path]) {
            const response = await page.goto(`${server.url}${target}`);
            expect(response?.status()).toBe(200);
            expect(response?.headers()['content-security-policy']).toContain("form-action 'self'");
            expect(response?.headers()['x-frame-options']).toBe('DENY');
            expect(await page.textContent('#workspace')).toBe(hostile);
            expect(await page.locator('#injected, img').count()).toBe(0);
          }
        } finally {
          await context.close();
        }
        const big = await fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: {
            cookie: ws.cookie,
            origin: server.url,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: `csrf_token=${'x'.repeat(10_000)}`,
        });
        expect(big.status).toBe(413);
        expect(await balanceOf(ws.tenantId)).toBe(0);
      },
    );

    it('pages the history newest first with a cursor', async () => {
      const ws = await owner();
      for (const usd of [5, 25, 100]) {
        const path = await startPurchase(ws.cookie, { pack: usd });
        expect((await confirm(ws.cookie, path, await csrfOf(ws.cookie, path))).status).toBe(303);
      }
      const first = await (await api(ws.cookie, 'GET', '/api/billing/transactions?limit=2')).json();
      expect(first.transactions.map((t: { amountMicros: number }) => t.amountMicros)).toEqual([
        100 * USD,
        25 * USD,
      ]);
      expect(first.nextCursor).toEqual(expect.any(String));
      const second = await (
        await api(ws.cookie, 'GET', `/api/billing/transactions?limit=2&cursor=${first.nextCursor}`)
      ).json();
      expect(second.transactions.map((t: { amountMicros: number }) => t.amountMicros)).toEqual([5 * USD]);
      expect(second.nextCursor).toBeNull();
    });

    it('settles by hand: releases stale holds and answers the balance', async () => {
      const ws = await owner();
      const path = await startPurchase(ws.cookie, { pack: 5 });
      await confirm(ws.cookie, path, await csrfOf(ws.cookie, path));
      // A hold past its expiry and one of an instance that no longer beats; no call will settle them.
      await store.db
        .insertInto('holds')
        .values([
          {
            id: crypto.randomUUID(),
            tenant_id: ws.tenantId,
            amount_micros: 1000,
            expires_at: new Date(Date.now() - 1000),
          },
          {
            id: crypto.randomUUID(),
            tenant_id: ws.tenantId,
            amount_micros: 2000,
            expires_at: new Date(Date.now() + 600_000),
            instance_id: crypto.randomUUID(),
          },
          // A live call's hold stays.
          {
            id: crypto.randomUUID(),
            tenant_id: ws.tenantId,
            amount_micros: 3000,
            expires_at: new Date(Date.now() + 600_000),
          },
        ])
        .execute();
      const response = await api(ws.cookie, 'POST', '/api/billing/settle', {});
      expect(response.status).toBe(200);
      const settled = (await response.json()) as { releasedHolds: number };
      expect(settled).toMatchObject({ unsettledCalls: 0, balanceMicros: 5 * USD });
      // The expired hold is this settle's to release. The gone instance's may have been released
      // already by the instances' own reaping, which runs on every heartbeat.
      expect([1, 2]).toContain(settled.releasedHolds);
      const left = await store.db
        .selectFrom('holds')
        .select('amount_micros')
        .where('tenant_id', '=', ws.tenantId)
        .execute();
      expect(left).toEqual([{ amount_micros: 3000 }]);
    });
  });
}

describe('payments in production', () => {
  let store: TestStore;
  let server: RunningPlatform;

  beforeAll(async () => {
    store = await openTestStore();
    server = await startPlatformAtOwnUrl(store, {
      production: true,
      // An outside IdP stands in (production refuses the development one): any token names its subject.
      identity: { verify: async (token) => ({ subject: token, email: `${token}@example.test` }) },
    });
  });
  afterAll(async () => {
    await server?.close();
    await store?.dispose();
  });

  it('refuses the development processor: no purchase starts and its pages do not exist', async () => {
    expect(server.platform.context.payments).toBeNull();
    expect(server.platform.context.devPayments).toBeNull();
    const page = await fetch(`${server.url}/billing/purchases/${crypto.randomUUID()}`, {
      redirect: 'manual',
    });
    expect(page.status).toBe(404);
    // Signed out, /billing still resolves to a page that asks to sign in.
    const signedOut = await fetch(`${server.url}/billing`, { redirect: 'manual' });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get('location')).toBe('/sign-in?return_to=%2Fbilling');

    const signedIn = await fetch(`${server.url}/api/auth/session`, {
      method: 'POST',
      headers: { authorization: 'Bearer prod-owner' },
    });
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
    const purchase = await fetch(`${server.url}/api/billing/purchase`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ pack: 5 }),
    });
    expect(purchase.status).toBe(503);
    expect(await purchase.json()).toEqual({
      message: 'No payment processor is configured',
      code: 'PAYMENTS_UNAVAILABLE',
    });
    const billing = await fetch(`${server.url}/billing`, { headers: { cookie } });
    expect(billing.status).toBe(200);
    const html = await billing.text();
    expect(html).toContain('No payment processor is configured');
    expect(html).not.toContain('name="pack"');
  });
});
