/**
 * No dead links: every URL the platform's API hands out (a balance's `top_up_url`, a refusal's
 * `connect_url`, a purchase's `url`, an invitation's `acceptUrl`, an integration's `logo_url` and
 * `docs_url`) opens a page or an image, signed in and signed out, and so does every link on those
 * pages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, startFakeUpstream } from './support/fake-upstream.js';
import { seedProviders } from './support/metered.js';
import {
  type RunningPlatform,
  type SignedInOwner,
  signedInOwner,
  startPlatformAtOwnUrl,
} from './support/platform.js';
import { openTestStore, type TestStore } from './support/stores.js';

let store: TestStore;
let upstream: FakeUpstream;
let server: RunningPlatform;
let owner: SignedInOwner;

beforeAll(async () => {
  store = await openTestStore();
  upstream = await startFakeUpstream();
  server = await startPlatformAtOwnUrl(store);
  await seedProviders(server.platform, upstream.url);
  owner = await signedInOwner(server, 'links-owner@example.test');
});
afterAll(async () => {
  await server?.close();
  await upstream?.close();
  await store?.dispose();
});

const json = (cookie: string) => ({ cookie, 'content-type': 'application/json' });

/** The URLs the API answers with, gathered the way a client meets them. */
async function handedOut(): Promise<Array<[string, string]>> {
  const balance = await fetch(`${server.url}/api/billing/balance`, {
    headers: { authorization: `Bearer ${owner.appKey}` },
  });
  const { top_up_url } = (await balance.json()) as { top_up_url: string };
  // The app has no connection to `llm`: the refusal says where to make one.
  const refused = await fetch(`${server.url}/proxy/llm/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner.appKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo-small', messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(refused.status).toBe(403);
  const { connect_url } = ((await refused.json()) as { error: { connect_url: string } }).error;
  const purchase = await fetch(`${server.url}/api/billing/purchase`, {
    method: 'POST',
    headers: json(owner.cookie),
    body: JSON.stringify({ pack: 5 }),
  });
  const { url } = (await purchase.json()) as { url: string };
  const invitation = await fetch(`${server.url}/api/tenants/me/invitations`, {
    method: 'POST',
    headers: json(owner.cookie),
    body: JSON.stringify({ email: 'invited@example.test', role: 'member' }),
  });
  const { acceptUrl } = (await invitation.json()) as { acceptUrl: string };
  return [
    ['top_up_url', top_up_url],
    ['connect_url', connect_url],
    ['purchase url', url],
    ['acceptUrl', acceptUrl],
  ];
}

/** The links of an HTML page, resolved against it (this platform's only: the pages link nowhere else). */
function linksOf(html: string, base: string): string[] {
  return [...html.matchAll(/<a [^>]*href="([^"]+)"/g)].map((match) =>
    new URL(match[1]!.replaceAll('&amp;', '&'), base).toString(),
  );
}

async function expectPage(url: string, cookie: string, who: string): Promise<string> {
  const response = await fetch(url, { headers: cookie ? { cookie } : {}, redirect: 'follow' });
  const html = await response.text();
  expect(response.status, `${who}: ${url}`).not.toBe(404);
  expect(response.status, `${who}: ${url}`).toBeLessThan(500);
  expect(response.headers.get('content-type'), `${who}: ${url}`).toContain('text/html');
  return html;
}

describe('links the API hands out', () => {
  it('each opens a page, signed in and signed out, and so does each link on it', async () => {
    const links = await handedOut();
    for (const [name, url] of links) {
      expect(url.startsWith(server.url), `${name} is this platform's: ${url}`).toBe(true);
      for (const [who, cookie] of [
        ['signed in', owner.cookie],
        ['signed out', ''],
      ] as const) {
        const html = await expectPage(url, cookie, `${name}, ${who}`);
        for (const link of linksOf(html, url)) {
          expect(link.startsWith(server.url), `a link on ${url} stays here: ${link}`).toBe(true);
          await expectPage(link, cookie, `a link on ${name}'s page, ${who}`);
        }
      }
    }
  });

  it('the integration page says whether the workspace is connected, and an unknown one is 404', async () => {
    const page = await fetch(`${server.url}/integrations/llm`, { headers: { cookie: owner.cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('no connection to llm yet');
    expect(html).toContain('/api/connections');
    const created = await fetch(`${server.url}/api/connections`, {
      method: 'POST',
      headers: json(owner.cookie),
      body: JSON.stringify({
        provider: 'llm',
        profile: 'byok_static',
        display_name: 'Team <key>',
        credential: { api_key: 'sk-x' },
      }),
    });
    expect(created.status).toBe(201);
    const after = await (
      await fetch(`${server.url}/integrations/llm`, { headers: { cookie: owner.cookie } })
    ).text();
    expect(after).toContain('Team &lt;key&gt;');
    expect(after).not.toContain('sk-x');
    const unknown = await fetch(`${server.url}/integrations/nope`, { headers: { cookie: owner.cookie } });
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('no integration named nope');
    expect(
      (await fetch(`${server.url}/integrations/${'x'.repeat(300)}`, { headers: { cookie: owner.cookie } }))
        .status,
    ).toBe(404);
  });

  it("each integration's logo_url is an image and its docs_url a page, signed in and signed out", async () => {
    const anonymous = (await (await fetch(`${server.url}/api/integrations`)).json()) as {
      integrations: Array<{ logo_url: string; docs_url: string }>;
    };
    const signedIn = (await (
      await fetch(`${server.url}/api/integrations`, { headers: { cookie: owner.cookie } })
    ).json()) as Array<{ logo_url: string; docs_url: string }>;
    const rows = [...anonymous.integrations, ...signedIn];
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      for (const url of [row.logo_url, row.docs_url]) {
        expect(url.startsWith(server.url), `this platform's: ${url}`).toBe(true);
      }
      for (const cookie of [owner.cookie, '']) {
        const logo = await fetch(row.logo_url, { headers: cookie ? { cookie } : {} });
        expect(logo.status, row.logo_url).toBe(200);
        expect(logo.headers.get('content-type')).toContain('image/svg+xml');
        const html = await expectPage(row.docs_url, cookie, 'docs_url');
        for (const link of linksOf(html, row.docs_url))
          await expectPage(link, cookie, 'a link on a docs page');
      }
    }
  });
});
