/**
 * The dashboard's pages walked by clicking in headless Chromium against a real platform: buying
 * credit, switching on and connecting an integration (its status live), deploying a tool through
 * its wizard (steps, and one page without a layout), the deployment's usage chart after a
 * metered call, keys shown once, members and a viewer who cannot change billing, settings, and
 * the public pricing page. Hostile names show as text; every page passes axe.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post as postToLedger } from '../../src/billing/ledger.js';
import {
  addCookie,
  contextWithCookie,
  describeInBrowser,
  HAS_CHROMIUM,
  launchChromium,
} from '../support/chromium.js';
import { publishTestRelease } from '../support/deploy.js';
import { type FakeUpstream, startFakeUpstream } from '../support/fake-upstream.js';
import { seedProviders } from '../support/metered.js';
import {
  devSignIn,
  type RunningPlatform,
  sessionClient,
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

const HOSTILE = '<img src=x onerror=alert(1)>"><script>alert(2)</script>';
const TINY_SERVER =
  "require('node:http').createServer((q, s) => s.end('ok')).listen(process.env.PORT, '127.0.0.1')";
const tiny = { type: 'directory' as const, path: process.cwd(), start: ['node', '-e', TINY_SERVER] };

let store: TestStore;
let server: RunningPlatform;
let upstream: FakeUpstream;
let browser: Browser;
const api = sessionClient(() => server.url);

beforeAll(async () => {
  ensureDashboardBuilt();
  store = await openTestStore();
  upstream = await startFakeUpstream();
  server = await startPlatformAtOwnUrl(store, {
    dashboard: { livePollMs: 100 },
    rateLimits: { deploy: { limit: 1000, windowMs: 60_000 } },
  });
  await seedProviders(server.platform, upstream.url);
  await publishTestRelease(server.platform, {
    slug: 'desk',
    artifact: tiny,
    required: ['search'],
    wizardInputs: [
      { key: 'DESK_NAME', label: 'Desk name', type: 'text', required: true },
      { key: 'API_TOKEN', label: 'API token', type: 'secret', required: false },
    ],
    wizardLayout: {
      version: 1,
      subSteps: [
        {
          id: 'connect',
          title: 'Connect your services',
          sections: [{ type: 'integration', providers: ['search'] }],
        },
        {
          id: 'configure',
          title: 'Configure the desk',
          sections: [{ type: 'inputs', keys: ['DESK_NAME', 'API_TOKEN'] }],
        },
      ],
    },
  });
  await publishTestRelease(server.platform, {
    slug: 'plain',
    artifact: tiny,
    wizardInputs: [{ key: 'GREETING', label: 'Greeting', type: 'text', required: false }],
  });
  await publishTestRelease(server.platform, { slug: 'hostile', artifact: tiny });
  // Listed with a release that names nothing to run: no deploy is offered for it.
  await publishTestRelease(server.platform, { slug: 'listed', artifact: null });
  await store.db
    .updateTable('tools')
    .set({ name: HOSTILE, description: HOSTILE })
    .where('slug', '=', 'hostile')
    .execute();
  await store.db
    .insertInto('integrations')
    .values({ provider: 'hostile-int', name: HOSTILE, description: HOSTILE, category: 'other' })
    .execute();
  if (HAS_CHROMIUM) browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await upstream?.close();
  await store?.dispose();
});

/** A page of a fresh context, its problems collected, and any dialog recorded (none may open). */
/** A signed-in owner whose workspace has USD 5 of credit. */
async function ownerWithCredit(email: string) {
  const owner = await signedInOwner(server, email);
  await postToLedger(store.db, {
    tenantId: owner.tenantId,
    amountMicros: 5_000_000,
    kind: 'grant',
    idempotencyKey: `credit-${email}`,
  });
  return owner;
}

async function openPage(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.accept();
  });
  return { context, page, problems };
}

/**
 * Signs `email` in through the development IdP's API and opens the home page, as
 * `signInByClicking` leaves it. The first test signs in by clicking (its problems counted); the
 * others are about what comes after, and the click-through costs seconds on shared cores.
 */
async function signInBySession(page: Page, email: string): Promise<void> {
  await addCookie(page.context(), server.url, await devSignIn(server, email));
  await page.goto(`${server.url}/`);
  await page.waitForSelector('html[data-ready="true"]');
}

const tenantOf = async (email: string) =>
  (
    await store.db
      .selectFrom('users')
      .select('default_tenant_id')
      .where('email', '=', email)
      .executeTakeFirstOrThrow()
  ).default_tenant_id!;

describeInBrowser('the dashboard, page by page', () => {
  it('a new owner buys credit, connects an integration, deploys through the wizard and sees the usage', async () => {
    const { context, page, problems } = await openPage();
    const email = 'walker@example.test';
    await signInByClicking(page, server, email);
    // A new workspace's home lists its first steps, each a link to where it is taken.
    const firstSteps = () => page.locator('#first-steps li').allTextContents();
    const stepLinks = () => page.locator('#first-steps a').allTextContents();
    expect(await stepLinks()).toEqual(['Add credit', 'Connect an integration', 'Deploy a tool']);

    // Billing: buy the USD 25 pack through the development processor.
    await page.getByRole('link', { name: 'Billing' }).click();
    await Promise.all([page.waitForURL(/\/billing\/purchases\//), page.click('#pack-25')]);
    await Promise.all([page.waitForURL(/\/billing\?purchase=/), page.click('#confirm')]);
    expect(await page.textContent('#completed')).toBe('Added USD 25.00 of credit.');
    expect(await page.textContent('#balance')).toBe('USD 25.00');
    await page.waitForSelector('html[data-ready="true"]');
    await expectAccessible(page);
    await screenshot(page, 'billing');

    // Integrations: switch Search on, connect it through the managed pool; the status is live.
    await page.getByRole('link', { name: 'Integrations' }).click();
    const search = page.locator('article', { has: page.locator('#int-search') });
    await search.getByRole('button', { name: 'Turn on' }).click();
    expect(await page.textContent('.notice')).toBe('Integration turned on.');
    await search.locator('summary').click();
    await search.getByRole('button', { name: 'Use the managed pool' }).click();
    expect(await page.textContent('.notice')).toBe('Connected through the managed pool.');
    const status = page.locator('#main [data-live="connection-status"]').first();
    expect(await status.textContent()).toBe('connected');
    // Two of the first steps are taken; the home page marks them done, the last is still a link.
    await page.goto(`${server.url}/`);
    expect(await firstSteps()).toEqual([
      'Add credit (done)',
      'Connect an integration (done)',
      'Deploy a tool (it gets its own address and App Key)',
    ]);
    expect(await stepLinks()).toEqual(['Deploy a tool']);
    await page.getByRole('link', { name: 'Integrations' }).click();
    // The hostile integration's name is text, not markup.
    expect(await page.locator(`h2:has-text("onerror")`).first().textContent()).toContain(HOSTILE);
    await page.waitForSelector('html[data-ready="true"]');
    await expectAccessible(page);
    await screenshot(page, 'integrations');
    const tenantId = await tenantOf(email);
    await store.db
      .updateTable('connections')
      .set({ status: 'needs_reauth' })
      .where('tenant_id', '=', tenantId)
      .execute();
    await page.waitForSelector('#main [data-live="connection-status"][data-status="needs_reauth"]');
    expect(await status.textContent()).toBe('needs reauth');
    await store.db
      .updateTable('connections')
      .set({ status: 'connected' })
      .where('tenant_id', '=', tenantId)
      .execute();

    // The integration's page: a Connection Key minted (shown once, listed with who minted it),
    // then revoked.
    await page.locator('#int-search a').click();
    await page.waitForSelector('html[data-ready="true"]');
    const keysSection = page.locator('section[aria-labelledby="connection-keys-title"]');
    expect(await keysSection.textContent()).toContain('No Connection Keys.');
    await page.fill('#connection-key-name', 'worker');
    await page.getByRole('button', { name: 'Create Connection Key' }).click();
    const connectionKey = (await page.textContent('#new-key'))!;
    expect(connectionKey).toMatch(/^service_sk_/);
    expect(await keysSection.textContent()).toContain('worker');
    expect(await keysSection.textContent()).toContain(email);
    expect(await keysSection.textContent()).toContain(connectionKey.slice(0, 16));
    await page.waitForSelector('html[data-ready="true"]');
    await expectAccessible(page);
    await screenshot(page, 'integration');
    const used = await fetch(`${server.url}/proxy/search/search?q=x`, {
      headers: { 'x-api-key': connectionKey },
    });
    expect(used.status).toBe(200);
    // Revoking asks first (the one dialog this journey expects, accepted).
    const before = problems.length;
    await keysSection.getByRole('button', { name: 'Revoke', exact: true }).click();
    expect(await page.textContent('.notice')).toBe('Connection Key revoked.');
    expect(problems.splice(before)).toEqual([
      'dialog: Revoke this Connection Key? Anything using it stops working at once.',
    ]);
    expect(await keysSection.textContent()).toContain('No Connection Keys.');
    const refused = await fetch(`${server.url}/proxy/search/search?q=x`, {
      headers: { 'x-api-key': connectionKey },
    });
    expect(refused.status).toBe(401);

    // Tools: the catalog, a hostile name as text, then the desk's two-step wizard.
    await page.getByRole('link', { name: 'Tools', exact: true }).click();
    expect(await page.locator('#main').textContent()).toContain(HOSTILE);
    const listed = page.locator('article', { has: page.locator('#tool-listed') });
    expect(await listed.textContent()).toContain('not deployable yet');
    expect(await listed.getByRole('link').count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'tools');
    await page.getByRole('link', { name: 'Deploy Tool desk' }).click();
    await page.waitForSelector('html[data-ready="true"]');
    expect(await page.locator('fieldset.wizard-step:visible legend').allTextContents()).toEqual([
      'Step 1 of 2: Connect your services',
    ]);
    expect(await page.getByRole('button', { name: 'Deploy Tool desk' }).isVisible()).toBe(false);
    await expectAccessible(page);
    await screenshot(page, 'deploy-wizard');
    await page.getByRole('button', { name: 'Next' }).click();
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe(
      'Step 2 of 2: Configure the desk',
    );
    await page.getByLabel('Desk name (required)').fill('Research');
    await page.getByLabel('API token').fill('tok-secret');
    await page.getByLabel('Address (required)').fill('my-desk');
    await page.getByRole('button', { name: 'Deploy Tool desk' }).click();
    const key = (await page.textContent('#new-key'))!;
    expect(key).toMatch(/^service_sk_/);
    await page.getByRole('link', { name: 'Open the deployment' }).click();
    expect(await page.textContent('.status')).toBe('running');
    expect(await page.locator('#main').textContent()).toContain('API_TOKEN');
    expect(await page.locator('#main').textContent()).not.toContain('tok-secret');

    // A metered call with the deployment's key: its usage chart draws it.
    const call = await fetch(`${server.url}/proxy/search/search?q=x`, { headers: { 'x-api-key': key } });
    expect(call.status).toBe(200);
    await page.reload();
    await page.waitForSelector('#usage-chart[data-drawn="true"] canvas');
    await expectAccessible(page);
    await screenshot(page, 'deployment');

    // Rotating its App Key shows the new key once.
    await page
      .getByRole('button', { name: /^Rotate/ })
      .first()
      .click();
    const rotated = (await page.textContent('#new-key'))!;
    expect(rotated).toMatch(/^service_sk_/);
    expect(rotated).not.toBe(key);
    await page.goto(page.url());
    expect(await page.locator('#new-key').count()).toBe(0);

    // Deployed: the first steps are done, and home no longer lists them.
    await page.goto(`${server.url}/`);
    expect(await page.locator('#first-steps').count()).toBe(0);

    // Deployments list.
    await page.getByRole('link', { name: 'Deployments' }).click();
    expect(await page.locator('#main td').first().textContent()).toBe('Tool desk');
    await expectAccessible(page);
    await screenshot(page, 'deployments');

    // A tool without a layout deploys from one page.
    await page.goto(`${server.url}/tools/plain/deploy`);
    await page.waitForSelector('html[data-ready="true"]');
    expect(await page.getByRole('button', { name: 'Next' }).count()).toBe(0);
    await page.getByLabel('Greeting').fill('hello');
    await page.getByLabel('Address (required)').fill('plain-one');
    await page.getByRole('button', { name: 'Deploy Tool plain' }).click();
    expect(await page.textContent('#new-key')).toMatch(/^service_sk_/);
    expect(problems.join('\n')).toBe('');
    await context.close();
  }, 120_000);

  it('keys: a new key is shown once; members: an invitation; settings: a rename; a viewer cannot change billing', async () => {
    const { context, page, problems } = await openPage();
    const email = 'keeper@example.test';
    await signInBySession(page, email);
    const tenantId = await tenantOf(email);

    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByLabel('Kind').selectOption('cli');
    await page.getByLabel('Name').fill(HOSTILE);
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await page.textContent('#new-key')).toMatch(/^service_sk_/);
    expect(await page.locator('#main td').first().textContent()).toBe(HOSTILE);
    await expectAccessible(page);
    await screenshot(page, 'keys');
    // Opened again (not the form's answer), the key is not there.
    await page.goto(page.url());
    expect(await page.locator('#new-key').count()).toBe(0);

    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByLabel('Email (required)').fill('viewer@example.test');
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    expect(await page.textContent('.notice strong')).toBe('Invitation sent to viewer@example.test.');
    // The link is shown on the answer too, for an owner to pass on when no mail reaches them.
    expect(await page.textContent('#invitation-link')).toMatch(/\/invitations\/accept\?token=[\w-]{20,}$/);
    expect(await page.locator('#main').textContent()).toContain('viewer@example.test');
    // The only owner's own row offers no role change or removal, which the API would refuse: it says why.
    const changeRole = page.getByRole('button', { name: 'Change role' });
    const remove = page.getByRole('button', { name: 'Remove', exact: true });
    expect(await changeRole.count()).toBe(0);
    expect(await remove.count()).toBe(0);
    // Nor Leave, which the API refuses the only owner.
    const leave = page.getByRole('button', { name: 'Leave', exact: true });
    expect(await leave.count()).toBe(0);
    expect(await page.textContent('#only-owner')).toContain('make someone else owner');
    await expectAccessible(page);
    await screenshot(page, 'members');
    // With a second owner, either may be changed; the other is removed, and one's own row offers Leave.
    await signedInTeammate(server, tenantId, 'owner', 'co-owner@example.test');
    await page.goto(page.url());
    expect(await changeRole.count()).toBe(2);
    expect(await remove.count()).toBe(1);
    expect(await leave.count()).toBe(1);
    expect(await page.locator('#only-owner').count()).toBe(0);

    // A member sees Leave on their own row only; pressing it takes them out of the workspace.
    const memberCookie = await signedInTeammate(server, tenantId, 'member', 'leaver@example.test');
    const memberContext = await contextWithCookie(browser, server.url, memberCookie);
    const memberPage = await memberContext.newPage();
    memberPage.on('dialog', (dialog) => dialog.accept());
    await memberPage.goto(`${server.url}/members`);
    const memberLeave = memberPage.getByRole('button', { name: 'Leave', exact: true });
    expect(await memberLeave.count()).toBe(1);
    expect(await memberPage.getByRole('button', { name: 'Remove', exact: true }).count()).toBe(0);
    await memberLeave.click();
    await memberPage.waitForURL(`${server.url}/`);
    const left = await store.db
      .selectFrom('memberships')
      .innerJoin('users', 'users.id', 'memberships.user_id')
      .select('memberships.role')
      .where('memberships.tenant_id', '=', tenantId)
      .where('users.email', '=', 'leaver@example.test')
      .execute();
    expect(left).toEqual([]);
    await memberContext.close();

    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Workspace name (required)').fill('Renamed <b>ws</b>');
    await page.getByRole('button', { name: 'Rename workspace' }).click();
    expect(await page.textContent('.who .muted')).toBe('Renamed <b>ws</b> · owner');
    await expectAccessible(page);
    await screenshot(page, 'settings');
    expect(problems.join('\n')).toBe('');
    await context.close();

    // A viewer of the workspace: billing is the owners', by the page and by the API behind it.
    const viewer = await signedInTeammate(server, tenantId, 'viewer', 'a-viewer@example.test');
    const billing = await api(viewer, 'GET', '/billing');
    expect(billing.status).toBe(403);
    expect(await billing.text()).toContain('owners see and change billing');
    // Nor is a viewer handed a deploy form the deploy API would refuse.
    const deploy = await api(viewer, 'GET', '/tools/plain/deploy');
    expect(deploy.status).toBe(403);
    expect(await deploy.text()).toContain('Viewers cannot deploy tools.');
    const owner = await signedInOwner(server, 'caps-owner@example.test');
    const viewerOfOwner = await signedInTeammate(
      server,
      owner.tenantId,
      'viewer',
      'caps-viewer@example.test',
    );
    const caps = await api(viewerOfOwner, 'PUT', '/api/billing/spend-caps', {
      app_id: owner.appId,
      daily_micros: 1,
      monthly_micros: null,
    });
    expect(caps.status).toBe(403);
    const home = await (await api(viewerOfOwner, 'GET', '/')).text();
    expect(home).toContain('Spending figures are shown to the workspace');
    expect(home).not.toContain('spend-chart');
    // Nor a link to billing or keys, which would answer them 403: not on the page, not in the nav.
    expect(home).not.toContain('Add credit');
    const navOf = (page: string) => page.match(/<nav aria-label="Main">.*?<\/nav>/s)?.[0] ?? '';
    expect(navOf(home)).toContain('>Deployments</a>');
    expect(navOf(home)).not.toContain('>Billing</a>');
    expect(navOf(home)).not.toContain('>Keys</a>');
    const ownerHome = await (await api(owner.cookie, 'GET', '/')).text();
    expect(ownerHome).toContain('Add credit');
    expect(navOf(ownerHome)).toContain('>Billing</a>');
    expect(navOf(ownerHome)).toContain('>Keys</a>');
  }, 90_000);

  it('a form in a tab left open acts on the workspace it showed, or not at all once another tab switched', async () => {
    const { context, page } = await openPage();
    const email = 'two-tabs@example.test';
    await signInBySession(page, email);
    const first = await tenantOf(email);
    const firstName = (await store.db
      .selectFrom('tenants')
      .select('name')
      .where('id', '=', first)
      .executeTakeFirstOrThrow())!.name;
    // A second workspace (creating it switches to it), then back to the first.
    await page.goto(`${server.url}/settings`);
    await page.getByLabel('New workspace (required)').fill('Second');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    const second = await tenantOf(email);
    await page
      .getByRole('form', { name: `Switch to ${firstName}` })
      .getByRole('button')
      .click();
    expect(await tenantOf(email)).toBe(first);

    // Three tabs open on the first workspace; a fourth switches to the second.
    const settings = await context.newPage();
    await settings.goto(`${server.url}/settings`);
    const members = await context.newPage();
    await members.goto(`${server.url}/members`);
    const billing = await context.newPage();
    await billing.goto(`${server.url}/billing`);
    const other = await context.newPage();
    await other.goto(`${server.url}/settings`);
    await other.getByRole('form', { name: 'Switch to Second' }).getByRole('button').click();
    expect(await tenantOf(email)).toBe(second);

    const switched = `This page was for the workspace ${firstName}, but you have since switched to the workspace Second. Nothing was changed`;
    await settings.getByLabel('Workspace name (required)').fill('Renamed from a stale tab');
    await settings.getByRole('button', { name: 'Rename workspace' }).click();
    expect(await settings.textContent('.notice.error')).toContain(switched);
    await members.getByLabel('Email (required)').fill('stale@example.test');
    await members.getByLabel('Role', { exact: true }).selectOption('owner');
    await members.getByRole('button', { name: 'Send invitation' }).click();
    expect(await members.textContent('.notice.error')).toContain(switched);
    const bought = await Promise.all([
      billing.waitForResponse(/\/billing\/purchase$/),
      billing.click('#pack-25'),
    ]);
    expect(bought[0].status()).toBe(409);
    expect(await billing.textContent('[role=alert]')).toContain(switched);

    // Neither workspace changed: the names stand, no invitation, no purchase started.
    const tenants = await store.db
      .selectFrom('tenants')
      .select(['id', 'name'])
      .where('id', 'in', [first, second])
      .execute();
    expect(Object.fromEntries(tenants.map((t) => [t.id, t.name]))).toEqual({
      [first]: firstName,
      [second]: 'Second',
    });
    for (const table of ['invitations', 'purchases'] as const) {
      const rows = await store.db
        .selectFrom(table)
        .select('tenant_id')
        .where('tenant_id', 'in', [first, second])
        .execute();
      expect(rows).toEqual([]);
    }
    await context.close();
  }, 90_000);

  it('at 375 px wide no page is wider than the screen: tables scroll in their own box', async () => {
    // Long names without a space, as far as each goes: the address in the header, the workspace's
    // (header and billing), a key's and a connection's.
    const owner = await ownerWithCredit('a-rather-long-owner-address-for-a-narrow-screen@example.test');
    await signedInTeammate(server, owner.tenantId, 'member', 'a-rather-long-teammate-address@example.test');
    const named = await api(owner.cookie, 'POST', '/api/keys', {
      kind: 'app',
      appId: owner.appId,
      name: 'k'.repeat(100),
    });
    expect(named.status).toBe(201);
    expect((await api(owner.cookie, 'PATCH', '/api/tenants/me', { name: 'w'.repeat(100) })).status).toBe(200);
    const connected = await api(owner.cookie, 'POST', '/api/connections', {
      provider: 'search',
      display_name: 'c'.repeat(200),
    });
    expect(connected.status).toBeLessThan(300);
    const context = await browser.newContext({ viewport: { width: 375, height: 800 } });
    const [name, value] = owner.cookie.split('=') as [string, string];
    await context.addCookies([{ name, value, url: server.url }]);
    const page = await context.newPage();
    const problems = collectPageProblems(page);
    for (const path of [
      '/members',
      '/integrations',
      '/integrations/search',
      '/billing',
      `/deployments/${owner.appId}`,
      '/keys',
    ]) {
      await page.goto(`${server.url}${path}`);
      await page.waitForSelector('html[data-ready="true"]');
      // What a person would open counts too ("Connect from a script").
      await page.evaluate(() => {
        for (const details of document.querySelectorAll('details')) details.open = true;
      });
      const widths = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth,
        screen: document.documentElement.clientWidth,
      }));
      expect({ path, ...widths }).toEqual({ path, page: widths.screen, screen: 375 });
    }
    // The key's row actions are within reach: its table scrolls to them.
    const revoke = page.getByRole('button', { name: 'Revoke' }).first();
    await revoke.scrollIntoViewIfNeeded();
    const box = (await revoke.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(375);
    await expectAccessible(page);
    await screenshot(page, 'keys-narrow');
    expect(problems.join('\n')).toBe('');
    await context.close();
  }, 60_000);

  it("keys: a deployment's own App Key names its deployment and offers Rotate, which hands the new key over, not Revoke", async () => {
    const owner = await ownerWithCredit('held-keys@example.test');
    const deployed = await api(owner.cookie, 'POST', '/api/deploy', {
      toolSlug: 'plain',
      slug: 'held',
      name: 'Held desk',
      inputs: {},
      connections: {},
    });
    expect(deployed.status).toBe(201);
    const heldId = ((await deployed.json()) as { app: { id: string } }).app.id;
    const context = await contextWithCookie(browser, server.url, owner.cookie);
    const page = await context.newPage();
    const problems = collectPageProblems(page);
    page.on('dialog', (dialog) => {
      problems.push(`dialog: ${dialog.message()}`);
      void dialog.accept();
    });
    await page.goto(`${server.url}/keys`);
    await page.waitForSelector('html[data-ready="true"]');
    const rowOf = (text: string) => page.locator('#main tbody tr', { hasText: text });
    const held = rowOf('held by the deployment');
    expect(await held.count()).toBe(1);
    expect(await held.getByRole('link', { name: 'Held desk' }).getAttribute('href')).toBe(
      `/deployments/${heldId}`,
    );
    expect(await held.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
    expect(await held.textContent()).toContain(
      'Rotating hands the new key to the deployment and restarts it',
    );
    // The other App Key, of an app no deployment runs, is the user's to revoke.
    expect(await rowOf('App Key · Tool').getByRole('button', { name: 'Revoke' }).count()).toBe(1);
    await expectAccessible(page);

    await held.getByRole('button', { name: 'Rotate' }).click();
    await page.waitForSelector('#new-key');
    expect(await page.locator('.notice.done').first().textContent()).toContain(
      'The platform handed it to the deployment and restarted it',
    );
    const newKey = (await page.textContent('#new-key'))!;
    // The deployment holds the new key (one row names it); the old one, in its overlap, no longer.
    const keys = (await (await api(owner.cookie, 'GET', '/api/keys')).json()) as {
      keys: { prefix: string; deployment: { appId: string } | null }[];
    };
    expect(keys.keys.filter((key) => key.deployment?.appId === heldId).map((key) => key.prefix)).toEqual([
      newKey.slice(0, 16),
    ]);
    expect(await rowOf('held by the deployment').count()).toBe(1);
    expect((await server.platform.context.deployments.get(owner.tenantId, heldId)).deployment?.state).toBe(
      'running',
    );
    expect(problems.join('\n')).toBe('');
    await context.close();
  }, 60_000);

  it('the pricing page answers anyone, signed out too', async () => {
    // The seeded integrations' rates made public, for the page to show priced rows.
    await store.db.updateTable('meter_rates').set({ public: true }).execute();
    const { context, page, problems } = await openPage();
    const response = await page.goto(`${server.url}/pricing`);
    expect(response?.status()).toBe(200);
    expect(await page.textContent('h1')).toBe('Pricing');
    // Every price reads to the cent at least, alike in both tables ("USD 3.60", never "USD 3.6").
    const prices = (await page.locator('td').allTextContents()).filter((cell) => cell.startsWith('USD'));
    expect(prices.length).toBeGreaterThan(0);
    for (const price of prices) expect(price).toMatch(/^USD \d+\.\d{2,}( per (call|[\d,]+ tokens))?$/);
    // Meters read as words, not as the API's names.
    expect(await page.locator('td', { hasText: /^Input tokens$/ }).count()).toBeGreaterThan(0);
    expect(await page.locator('td', { hasText: /_/ }).count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'pricing');
    expect(problems.join('\n')).toBe('');
    await context.close();
  });
});

describe('dashboard forms over HTTP', () => {
  it('a new CLI key says which keys it replaces, and its form sent again creates nothing', async () => {
    const owner = await signedInOwner(server, 'cli-keys@example.test');
    /** The create form of a fresh /keys page, and the page. */
    const openForm = async () => {
      const page = await (await api(owner.cookie, 'GET', '/keys')).text();
      const hidden = (name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(page)![1]!;
      return {
        page,
        fields: { _csrf: hidden('_csrf'), _action: 'create', nonce: hidden('nonce'), kind: 'cli' },
      };
    };
    const create = (fields: Record<string, string>) =>
      fetch(`${server.url}/keys`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          cookie: owner.cookie,
          origin: server.url,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams(fields).toString(),
      });
    const cliKeys = async () =>
      (
        (await (await api(owner.cookie, 'GET', '/api/keys')).json()) as {
          keys: { kind: string; name: string }[];
        }
      ).keys
        .filter((key) => key.kind === 'cli')
        .map((key) => key.name);

    const first = await openForm();
    expect(first.page).toContain('A new CLI key replaces your earlier CLI keys; you have none now.');
    const laptop = await create({ ...first.fields, name: 'laptop' });
    expect(laptop.status).toBe(200);
    const laptopPage = await laptop.text();
    expect(laptopPage).toMatch(/id="new-key">service_sk_/);
    expect(laptopPage).not.toContain('revoked-keys');
    // The panel says how the key reaches the developer CLI.
    expect(laptopPage).toContain(
      `run <code>service login --no-browser --api-base ${server.platform.context.baseUrl}</code> and paste it where it asks for the login code`,
    );

    const second = await openForm();
    expect(second.page).toMatch(/creating one revokes laptop \(<code>service_sk_[^<]*<\/code>\) at once/);
    const desk = await create({ ...second.fields, name: 'desk' });
    const deskPage = await desk.text();
    expect(deskPage).toMatch(/id="new-key">service_sk_/);
    expect(deskPage).toMatch(
      /id="revoked-keys">It replaces your earlier CLI keys, revoked now: laptop \(<code>/,
    );
    expect(await cliKeys()).toEqual(['desk']);

    // The answer reloaded sends its form again: refused, and the key just shown keeps working.
    const again = await create({ ...second.fields, name: 'desk' });
    expect(again.status).toBe(409);
    const againPage = await again.text();
    expect(againPage).toContain('This key was already created and shown once');
    expect(againPage).not.toContain('id="new-key"');
    expect(await cliKeys()).toEqual(['desk']);
  });

  it('offers an App Key only once the workspace has an app, and says where apps come from', async () => {
    // A new workspace has no app yet: its form offers a CLI key and links to the tools to deploy.
    const cookie = await devSignIn(server, 'no-apps-yet@example.test');
    const page = await (await api(cookie, 'GET', '/keys')).text();
    expect(page).toContain('App Keys are for deployed tools, and this workspace has none yet');
    expect(page).toContain('href="/tools">deploy a tool</a>');
    expect(page).not.toContain('<option value="app">');
    expect(page).not.toContain('id="key-app"');
    // A form sent with kind=app anyway is refused in the form's words, not the API's field path.
    const hidden = (name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(page)![1]!;
    const answer = await fetch(`${server.url}/keys`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        _csrf: hidden('_csrf'),
        _action: 'create',
        nonce: hidden('nonce'),
        kind: 'app',
        app: '',
      }).toString(),
    });
    expect(answer.status).toBe(400);
    expect(await answer.text()).toContain('Choose the app the App Key is for');
    // With an app, the App Key is offered first, for that app.
    const owner = await signedInOwner(server, 'has-an-app@example.test');
    const withApp = await (await api(owner.cookie, 'GET', '/keys')).text();
    expect(withApp).toContain('<option value="app">App Key (for a deployed tool)</option>');
    expect(withApp).toContain(`<option value="${owner.appId}">Tool (tool)</option>`);
    expect(withApp).not.toContain('this workspace has none yet');
  });

  it('says an integration is on or off alike on the list and on its own page', async () => {
    // A gateway the workspace reaches through the managed pool, with no switch of its own set.
    await store.db
      .insertInto('integrations')
      .values({ provider: 'gw-alike', name: 'Gateway alike', category: 'ai', kind: 'llm_gateway' })
      .execute();
    try {
      const owner = await signedInOwner(server, 'gw-alike@example.test');
      await store.db
        .insertInto('connections')
        .values({
          tenant_id: owner.tenantId,
          provider: 'gw-alike',
          profile: 'vendo_managed_pool',
          status: 'connected',
          display_name: 'Gateway alike',
          connected_at: new Date(),
        })
        .execute();
      const stateOn = (page: string) => /Gateway alike[\s\S]*?(On|Off) for this workspace/.exec(page)?.[1];
      const list = await (await api(owner.cookie, 'GET', '/integrations')).text();
      const own = await (await api(owner.cookie, 'GET', '/integrations/gw-alike')).text();
      expect([stateOn(list), stateOn(own)]).toEqual(['On', 'On']);
    } finally {
      await store.db.deleteFrom('connections').where('provider', '=', 'gw-alike').execute();
      await store.db.deleteFrom('integrations').where('provider', '=', 'gw-alike').execute();
    }
  });

  it('says an app with no output has none, rather than drawing an empty log', async () => {
    const owner = await signedInOwner(server, 'no-output@example.test');
    const page = await (await api(owner.cookie, 'GET', `/deployments/${owner.appId}`)).text();
    expect(page).toContain('<h2 id="logs-title">Logs</h2><p class="muted" id="no-logs">No output yet.</p>');
    expect(page).not.toContain('class="logs"');
  });

  it("refuses a form without its token, an unknown action, and another workspace's deployment", async () => {
    const owner = await signedInOwner(server, 'forms@example.test');
    const other = await signedInOwner(server, 'forms-other@example.test');
    const page = await (await api(owner.cookie, 'GET', '/keys')).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const post = (fields: Record<string, string>, cookie = owner.cookie) =>
      fetch(`${server.url}/keys`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      });
    expect((await post({ _action: 'create', kind: 'cli' })).status).toBe(403);
    expect((await post({ _csrf: csrf, _action: 'nope' })).status).toBe(400);
    expect((await post({ _csrf: csrf, _action: '__proto__' })).status).toBe(400);
    expect((await post({ _csrf: csrf, _action: 'revoke', id: 'not-a-key' })).status).toBe(404);
    expect((await post({ _csrf: csrf, _action: 'create', kind: 'cli', name: 'x'.repeat(200) })).status).toBe(
      400,
    );
    expect((await api(owner.cookie, 'GET', `/deployments/${other.appId}`)).status).toBe(404);
    expect((await api(owner.cookie, 'GET', '/deployments/not-an-id')).status).toBe(404);
    expect((await api(owner.cookie, 'GET', '/tools/nope/deploy')).status).toBe(404);
    // A mistyped address answers a browser a page with the navigation; API clients keep JSON.
    for (const path of ['/keys/', '/Billing']) {
      const lost = await fetch(`${server.url}${path}`, {
        headers: { cookie: owner.cookie, accept: 'text/html,application/xhtml+xml' },
      });
      expect(lost.status).toBe(404);
      expect(lost.headers.get('content-type')).toContain('text/html');
      const text = await lost.text();
      expect(text).toContain('There is no page at this address.');
      expect(text).toContain('<nav aria-label="Main">');
    }
    for (const [path, accept] of [
      ['/keys/', 'application/json'],
      ['/api/nope', 'text/html'],
    ] as const) {
      const lost = await fetch(`${server.url}${path}`, { headers: { cookie: owner.cookie, accept } });
      expect(lost.status).toBe(404);
      expect(await lost.json()).toEqual({ message: 'Not found' });
    }
    // An address the input guard refuses (a NUL, a broken percent-encoding) is a 400 page to a
    // browser, and the guard's JSON to anyone else.
    for (const path of ['/billing?cursor=%00', '/keys/%zz']) {
      const bad = await fetch(`${server.url}${path}`, {
        headers: { cookie: owner.cookie, accept: 'text/html,application/xhtml+xml' },
      });
      expect(bad.status).toBe(400);
      expect(bad.headers.get('content-type')).toContain('text/html');
      const text = await bad.text();
      expect(text).toContain('This address cannot be read');
      expect(text).toContain('<nav aria-label="Main">');
      const json = await fetch(`${server.url}${path}`, { headers: { cookie: owner.cookie } });
      expect(json.status).toBe(400);
      expect(((await json.json()) as { code: string }).code).toBe('INVALID_REQUEST');
    }
    // A deploy form sent twice at once deploys once, and both answers show its App Key.
    await postToLedger(store.db, {
      tenantId: owner.tenantId,
      amountMicros: 5_000_000,
      kind: 'grant',
      idempotencyKey: 'twice',
    });
    const form = await (await api(owner.cookie, 'GET', '/tools/plain/deploy')).text();
    const hidden = (name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(form)?.[1] ?? '';
    const deployFields = new URLSearchParams({
      _csrf: hidden('_csrf'),
      _action: 'deploy',
      idempotency: hidden('idempotency'),
      slug: 'twice-sent',
      input_greeting: 'hi',
    }).toString();
    const sendDeploy = () => postForm(server.url, owner.cookie, '/tools/plain/deploy', deployFields);
    const answers = await Promise.all([sendDeploy(), sendDeploy()]);
    const keys = await Promise.all(
      answers.map(async (answer) => /id="new-key">([^<]+)</.exec(await answer.text())?.[1]),
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(keys[0]).toMatch(/^service_sk_/);
    expect(keys[1]).toBe(keys[0]);
    // Rotating the deployment's own key on its page: the platform hands it over, the page says so.
    const apps = (await (await api(owner.cookie, 'GET', '/api/apps')).json()) as {
      apps: { id: string; slug: string }[];
    };
    const twice = apps.apps.find((app) => app.slug === 'twice-sent')!;
    const appKeys = (await (await api(owner.cookie, 'GET', '/api/keys')).json()) as {
      keys: { id: string; appId: string | null }[];
    };
    const heldKey = appKeys.keys.find((key) => key.appId === twice.id)!;
    const appPage = await (await api(owner.cookie, 'GET', `/deployments/${twice.id}`)).text();
    const rotated = await postForm(server.url, owner.cookie, `/deployments/${twice.id}`, {
      _csrf: /name="_csrf" value="([^"]+)"/.exec(appPage)?.[1] ?? '',
      _action: 'rotate-key',
      key: heldKey.id,
    });
    const rotatedText = await rotated.text();
    expect(rotated.status).toBe(200);
    expect(rotatedText).toContain('The platform handed it to the deployment and restarted it');
    expect(rotatedText).not.toContain('Give it to');
    // An app never deployed shows its address, not a link, and offers no redeploy or stop (the
    // API would refuse them); its address says it is not deployed, with no Retry-After.
    const idle = await (await api(owner.cookie, 'GET', `/deployments/${owner.appId}`)).text();
    expect(idle).toContain('(never deployed: nothing answers here)');
    expect(idle).toContain('nothing here to redeploy or stop');
    expect(idle).not.toContain('value="redeploy"');
    expect(idle).not.toContain('value="stop"');
    expect(idle).toContain('value="delete"');
    const idleSlug = (
      await store.db.selectFrom('apps').select('slug').where('id', '=', owner.appId).executeTakeFirstOrThrow()
    ).slug;
    const idleAddress = await api(owner.cookie, 'GET', `/apps/${idleSlug}/`);
    expect(idleAddress.status).toBe(404);
    expect(idleAddress.headers.get('retry-after')).toBeNull();
    expect(await idleAddress.text()).toContain('This app was never deployed');
    // A page of transactions that does not exist says so, and leads back to the newest.
    const lost = await (await api(owner.cookie, 'GET', '/billing?cursor=abc')).text();
    expect(lost).toContain('This page of transactions does not exist.');
    expect(lost).not.toContain('No transactions yet.');
    // A cap of nothing is refused in the form's words.
    const billingPage = await (await api(owner.cookie, 'GET', '/billing')).text();
    const billingCsrf = /name="_csrf" value="([^"]+)"/.exec(billingPage)?.[1] ?? '';
    const zeroCap = await postForm(server.url, owner.cookie, '/billing', {
      _csrf: billingCsrf,
      _action: 'caps',
      app: owner.appId,
      daily: '0',
    });
    expect(zeroCap.status).toBe(400);
    expect(await zeroCap.text()).toContain('A cap must be more than USD 0');
    // So are a warning out of range and names the API would refuse: never its field paths.
    const sendForm = async (path: string, fields: Record<string, string>) => {
      const form = await (await api(owner.cookie, 'GET', path)).text();
      const token = /name="_csrf" value="([^"]+)"/.exec(form)?.[1] ?? '';
      const answer = await postForm(server.url, owner.cookie, path, { _csrf: token, ...fields });
      return { status: answer.status, text: await answer.text() };
    };
    const warn = await sendForm('/billing', { _action: 'caps', app: owner.appId, warn: '0' });
    expect(warn.text).toContain('Warnings are whole percents from 1 to 99');
    expect(warn.text).not.toContain('warn_pcts');
    // Too long, a control character, a direction mark, nothing that shows (a zero-width space,
    // a Hangul filler).
    for (const name of ['x'.repeat(101), 'a\u0000b', 'a\u200fb', '\u200b', '\u3164\u2060']) {
      const renamed = await sendForm('/settings', { _action: 'rename-workspace', name });
      expect(renamed.status, name).toBe(400);
      expect(renamed.text).toContain(
        'The workspace name must be 1 to 100 characters, at least one of them visible, without control or text direction characters.',
      );
      expect(renamed.text).not.toMatch(/name: |body\.name/);
      const me = await sendForm('/settings', { _action: 'rename-me', name });
      expect(me.text).toContain('Your name must be 1 to 100 characters');
      const key = await sendForm('/keys', { _action: 'create', kind: 'cli', name });
      expect(key.status).toBe(400);
      expect(key.text).toContain('The key&#39;s name must be 1 to 100 characters');
      expect(key.text).not.toMatch(/name: |body\.name/);
    }
    // Your own name may be left empty: saving it so clears it, as the docs say.
    const myName = async () => (await (await api(owner.cookie, 'GET', '/api/user/me')).json()).user.name;
    expect((await sendForm('/settings', { _action: 'rename-me', name: 'Ada' })).status).toBe(303);
    expect(await myName()).toBe('Ada');
    const cleared = await sendForm('/settings', { _action: 'rename-me', name: '' });
    expect(cleared.status).toBe(303);
    expect(await myName()).toBeNull();
    expect(await (await api(owner.cookie, 'GET', '/settings')).text()).toContain(
      'name="name" type="text" value="forms&#39;s workspace" required maxlength="100"',
    );
    const big = await postForm(
      server.url,
      owner.cookie,
      '/keys',
      `_csrf=${csrf}&_action=create&name=${'x'.repeat(40_000)}`,
    );
    expect(big.status).toBe(413);
  });

  it('a refused deploy keeps what was typed (not secrets), spends no deploy on a bad address, and says when to retry', async () => {
    // Its own store and a limit of one deploy an hour (a fixed window: the wait is what is left of
    // it), so the count is this test's alone.
    const own = await openTestStore();
    const limited = await startPlatformAtOwnUrl(own, {
      rateLimits: { deploy: { limit: 1, windowMs: 60 * 60_000 } },
    });
    try {
      await publishTestRelease(limited.platform, {
        slug: 'desk',
        artifact: tiny,
        wizardInputs: [
          { key: 'DESK_NAME', label: 'Desk name', type: 'text', required: true },
          { key: 'LOUD', label: 'Loud', type: 'boolean', required: false },
          { key: 'API_TOKEN', label: 'API token', type: 'secret', required: false },
        ],
      });
      const owner = await signedInOwner(limited, 'refused@example.test');
      const sendForm = async (slug: string) => {
        const form = await (
          await fetch(`${limited.url}/tools/desk/deploy`, { headers: { cookie: owner.cookie } })
        ).text();
        const hidden = (name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(form)?.[1] ?? '';
        const answer = await postForm(limited.url, owner.cookie, '/tools/desk/deploy', {
          _csrf: hidden('_csrf'),
          _action: 'deploy',
          idempotency: hidden('idempotency'),
          slug,
          name: 'My desk',
          input_DESK_NAME: 'Research',
          input_LOUD: 'on',
          input_API_TOKEN: 'tok-secret',
        });
        return { status: answer.status, page: await answer.text() };
      };
      for (const slug of ['AB', 'a'.repeat(300)]) {
        const refused = await sendForm(slug);
        expect(refused.status).toBe(400);
        expect(refused.page).toContain('The address must be 3 to 64 lowercase letters');
        expect(refused.page).toContain(`name="slug" type="text" value="${slug}"`);
        expect(refused.page).toContain('name="name" type="text" value="My desk"');
        expect(refused.page).toContain('name="input_DESK_NAME" type="text" value="Research"');
        expect(refused.page).toContain('name="input_LOUD" checked');
        expect(refused.page).not.toContain('tok-secret');
        expect(refused.page).toContain('type it again after a refusal');
      }
      // Neither refusal spent the one deploy: this one reaches the API (and the billing gate)...
      expect((await sendForm('good-desk')).page).toContain('Add credit to this workspace before deploying');
      // ...and the next is over the limit, and told when to try again.
      const limitedAnswer = await sendForm('good-desk');
      expect(limitedAnswer.status).toBe(429);
      expect(limitedAnswer.page).toMatch(/Rate limit exceeded\. Try again in \d+ (minutes|seconds)\./);
    } finally {
      await limited.close();
      await own.dispose();
    }
  });
});
