/**
 * The dashboard's forms over HTTP, as a browser sends them: refusals in the form's words (never
 * the API's field paths), inputs that carry the API's limits, and answers that survive a reload
 * (a form sent again does nothing new; an accepted invitation lands on a page that reloads).
 *
 * @see docs/dashboard.md "Pages"
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrfTokenFor } from '../../src/platform/cli/bootstrap.js';
import { billingCsrfToken } from '../../src/platform/routes/billing-pages.js';
import { INVITATION_CSRF_PURPOSE } from '../../src/platform/routes/invitation-page.js';
import { publishTestRelease } from '../support/deploy.js';
import { seedProviders } from '../support/metered.js';
import {
  devSignIn,
  type RunningPlatform,
  type SignedInOwner,
  sessionClient,
  signedInOwner,
  signedInTeammate,
  startPlatformAtOwnUrl,
} from '../support/platform.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { postForm } from './support.js';

let store: TestStore;
let server: RunningPlatform;
const api = sessionClient(() => server.url);

beforeAll(async () => {
  store = await openTestStore();
  server = await startPlatformAtOwnUrl(store);
  // Nothing is called upstream here: the address only has to be one.
  await seedProviders(server.platform, 'http://127.0.0.1:9');
}, 60_000);
afterAll(async () => {
  await server?.close();
  await store?.dispose();
});

/** A hidden field of a page's form (the first of that name). */
const hidden = (page: string, name: string) =>
  new RegExp(`name="${name}" value="([^"]+)"`).exec(page)?.[1] ?? '';

/**
 * The fields a fresh page's form carries (its CSRF token and, when it has one, its one-time
 * nonce), and a sender of that form: sending it twice is what reloading its answer does.
 */
async function openForm(owner: SignedInOwner, path: string) {
  const page = await (await api(owner.cookie, 'GET', path)).text();
  const fixed = { _csrf: hidden(page, '_csrf'), nonce: hidden(page, 'nonce') };
  return {
    page,
    send: async (fields: Record<string, string>) => {
      const answer = await postForm(server.url, owner.cookie, path, { ...fixed, ...fields });
      return { status: answer.status, text: await answer.text(), location: answer.headers.get('location') };
    },
  };
}

const invitationLinks = async (owner: SignedInOwner) =>
  (
    (await (await api(owner.cookie, 'GET', '/api/tenants/me/invitations')).json()) as {
      invitations: { email: string }[];
    }
  ).invitations.map((i) => i.email);

describe('members: the invite form', () => {
  it('refuses an address the API would refuse in its own words, and its input carries maxlength 254', async () => {
    const owner = await signedInOwner(server, 'invite-words@example.test');
    const form = await openForm(owner, '/members');
    expect(form.page).toMatch(/id="invite-email" name="email" type="email" required maxlength="254"/);
    const partial = await form.send({ _action: 'invite', email: 'a@b', role: 'member' });
    expect(partial.status).toBe(400);
    expect(partial.text).toContain('Enter a full email address, like name@example.com.');
    expect(partial.text).not.toMatch(/email: |Invalid email/);
    const long = await form.send({
      _action: 'invite',
      email: `${'a'.repeat(250)}@example.test`,
      role: 'member',
    });
    expect(long.status).toBe(400);
    expect(long.text).toContain('The email address is too long (at most 254 characters).');
    expect(long.text).not.toMatch(/email: |Too big/);
    expect(await invitationLinks(owner)).toEqual([]);
  });

  it('sent again (its answer reloaded) sends nothing and keeps the link shown; inviting again says the earlier link ends', async () => {
    const owner = await signedInOwner(server, 'invite-once@example.test');
    const invitee = 'invitee@example.test';
    const first = await openForm(owner, '/members');
    const sent = await first.send({ _action: 'invite', email: invitee, role: 'member' });
    expect(sent.status).toBe(200);
    const link = /id="invitation-link">([^<]+)</.exec(sent.text)?.[1] ?? '';
    expect(link).toContain('/invitations/accept?token=');
    expect(sent.text).not.toContain('replaced-invitation');
    const token = new URL(link.replaceAll('&amp;', '&')).searchParams.get('token')!;
    const stillValid = () => server.platform.context.invitations.preview(token);

    const again = await first.send({ _action: 'invite', email: invitee, role: 'member' });
    expect(again.status).toBe(409);
    expect(again.text).toContain('This invitation was already sent and its link shown once');
    expect(again.text).not.toContain('id="invitation-link"');
    await expect(stillValid()).resolves.toMatchObject({ email: invitee });

    // A deliberate second invitation (a fresh form) replaces the first, and says so.
    const second = await openForm(owner, '/members');
    const replaced = await second.send({ _action: 'invite', email: invitee, role: 'viewer' });
    expect(replaced.status).toBe(200);
    expect(replaced.text).toContain(
      `id="replaced-invitation">It replaces the invitation sent to ${invitee} before: that earlier link no longer works.`,
    );
    await expect(stillValid()).rejects.toThrow();
    expect(await invitationLinks(owner)).toEqual([invitee]);
  });
});

describe("an integration's forms", () => {
  /** An owner with Search turned on and connected through the managed pool: the page's forms. */
  const connected = async (email: string) => {
    const owner = await signedInOwner(server, email);
    const turnOn = await openForm(owner, '/integrations/search');
    expect((await turnOn.send({ _action: 'enable', provider: 'search' })).status).toBe(303);
    expect((await turnOn.send({ _action: 'managed', provider: 'search' })).status).toBe(303);
    const page = await openForm(owner, '/integrations/search');
    const listed = (await (await api(owner.cookie, 'GET', '/api/connections')).json()) as {
      connections: { id: string; provider: string }[];
    };
    const connectionId = listed.connections.find((c) => c.provider === 'search')?.id ?? '';
    return { owner, page, connectionId };
  };
  const connectionKeys = async (owner: SignedInOwner, connectionId: string) =>
    (
      (await (await api(owner.cookie, 'GET', `/api/connections/${connectionId}/keys`)).json()) as {
        keys: unknown[];
      }
    ).keys.length;

  it('refuse a form whose integration was edited into no slug in their own words, not the API’s field path', async () => {
    const { page } = await connected('integration-edited@example.test');
    for (const action of ['enable', 'disable', 'managed', 'oauth']) {
      const answer = await page.send({ _action: action, provider: 'Not A Slug!' });
      expect(answer.status, action).toBe(404);
      expect(answer.text, action).toContain('No such integration.');
      expect(answer.text, action).not.toMatch(/provider: |integration slug/);
    }
    const key = await page.send({ _action: 'key', provider: '../x', api_key: 'sk-test' });
    expect(key.status).toBe(404);
  });

  it('carry the API limits as maxlength and refuse over-long names and an empty key in their own words', async () => {
    const { owner, page, connectionId } = await connected('integration-words@example.test');
    expect(page.page).toMatch(
      /id="connection-key-name" name="name" type="text" placeholder="worker" maxlength="100"/,
    );
    expect(page.page).toMatch(
      /id="key-name-search" name="display_name" type="text" placeholder="Team key" maxlength="200"/,
    );
    expect(page.page).toMatch(/id="key-search" name="api_key" type="password" required maxlength="4096"/);

    const longKeyName = await page.send({ _action: 'mintKey', id: connectionId, name: 'x'.repeat(101) });
    expect(longKeyName.status).toBe(400);
    expect(longKeyName.text).toContain(
      'The Connection Key&#39;s name must be 1 to 100 characters, at least one of them visible, without control or text direction characters.',
    );
    expect(longKeyName.text).not.toMatch(/name: |Too big/);
    expect(await connectionKeys(owner, connectionId)).toBe(0);

    const longName = await page.send({
      _action: 'key',
      provider: 'search',
      api_key: 'sk-test',
      display_name: 'x'.repeat(201),
    });
    expect(longName.status).toBe(400);
    expect(longName.text).toContain('The connection&#39;s name must be 1 to 200 characters');
    expect(longName.text).not.toMatch(/display_name: |Too big/);

    const noKey = await page.send({ _action: 'key', provider: 'search', api_key: '', display_name: 'Team' });
    expect(noKey.status).toBe(400);
    expect(noKey.text).toContain('Enter the API key to connect with.');
    expect(noKey.text).not.toMatch(/byok_static|api_key&quot;|needs a credential/);
  });

  it('a Connection Key form sent again (its answer reloaded) creates nothing and says so', async () => {
    const { owner, page, connectionId } = await connected('integration-once@example.test');
    const minted = await page.send({ _action: 'mintKey', id: connectionId, name: 'worker' });
    expect(minted.status).toBe(200);
    expect(minted.text).toMatch(/id="new-key">service_sk_/);
    expect(await connectionKeys(owner, connectionId)).toBe(1);

    const again = await page.send({ _action: 'mintKey', id: connectionId, name: 'worker' });
    expect(again.status).toBe(409);
    expect(again.text).toContain('This Connection Key was already created and shown once');
    expect(again.text).not.toContain('id="new-key"');
    expect(await connectionKeys(owner, connectionId)).toBe(1);
  });
});

describe('the invitation accept page', () => {
  /** An owner's invitation of `email`, who is signed in: the accept link's path and its token. */
  const invited = async (ownerEmail: string, email: string) => {
    const owner = await signedInOwner(server, ownerEmail);
    const sent = (await (
      await api(
        owner.cookie,
        'POST',
        '/api/tenants/me/invitations',
        { email, role: 'member' },
        {
          origin: server.url,
        },
      )
    ).json()) as { acceptUrl: string };
    const url = new URL(sent.acceptUrl);
    const invitee = await devSignIn(server, email);
    return { owner, invitee, path: `${url.pathname}${url.search}`, token: url.searchParams.get('token')! };
  };
  const acceptForm = (cookie: string, token: string) =>
    fetch(`${server.url}/invitations/accept`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        token,
        csrf_token: csrfTokenFor(cookie.split('=')[1]!, INVITATION_CSRF_PURPOSE),
      }),
    });

  it('writes the expiry as every other page writes dates', async () => {
    const { invitee, path } = await invited('dates-owner@example.test', 'dates@example.test');
    const page = await (await api(invitee, 'GET', path)).text();
    expect(page).toMatch(/The invitation expires \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\./);
    expect(page).not.toMatch(/expires \d{4}-\d{2}-\d{2}T/);
  });

  it('answers accepting with a redirect to the welcome, which reloads; Back and the form sent again lead there too', async () => {
    const { owner, invitee, path, token } = await invited(
      'welcome-owner@example.test',
      'welcome@example.test',
    );
    const accepted = await acceptForm(invitee, token);
    expect(accepted.status).toBe(303);
    const welcome = accepted.headers.get('location')!;
    expect(welcome).toBe(`/invitations/accepted?workspace=${owner.tenantId}`);
    for (let i = 0; i < 2; i++) {
      const shown = await api(invitee, 'GET', welcome);
      expect(shown.status).toBe(200);
      const text = await shown.text();
      expect(text).toContain('Welcome to welcome-owner&#39;s workspace');
      expect(text).toContain(`data-tenant-id="${owner.tenantId}"`);
      expect(text).toContain('<strong>member</strong>');
      expect(text).toContain('it is your current');
    }
    // Back to the accept link, or its form sent again: the welcome, not a refusal.
    const back = await api(invitee, 'GET', path);
    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe(welcome);
    const again = await acceptForm(invitee, token);
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe(welcome);
    // Anyone else is told the link is spent, and a welcome to a workspace not theirs is refused.
    const other = await devSignIn(server, 'someone-else@example.test');
    expect((await api(other, 'GET', path)).status).toBe(404);
    expect((await acceptForm(other, token)).status).toBe(404);
    expect((await api(other, 'GET', welcome)).status).toBe(404);
    expect((await api(other, 'GET', '/invitations/accepted?workspace=nope')).status).toBe(404);
  });
});

describe('ways on from a refusal or a purchase, and what a viewer is offered', () => {
  it('a deploy refused for want of credit links to the billing page', async () => {
    await publishTestRelease(server.platform, {
      slug: 'unfunded',
      artifact: { type: 'directory', path: process.cwd(), start: ['node', '-e', ''] },
    });
    const owner = await signedInOwner(server, 'unfunded@example.test');
    const form = await openForm(owner, '/tools/unfunded/deploy');
    const refused = await form.send({
      _action: 'deploy',
      idempotency: hidden(form.page, 'idempotency'),
      slug: 'unfunded-app',
    });
    expect(refused.status).toBe(402);
    expect(refused.text).toMatch(
      /role="alert">Add credit to this workspace before deploying <a href="\/billing">Add credit on the billing page<\/a><\/p>/,
    );
  });

  it("the development processor's confirmation page offers a way back to billing", async () => {
    const owner = await signedInOwner(server, 'cancel@example.test');
    const purchase = await api(
      owner.cookie,
      'POST',
      '/api/billing/purchase',
      { pack: 5 },
      { origin: server.url },
    );
    const confirmPath = new URL(((await purchase.json()) as { url: string }).url).pathname;
    const page = await (await api(owner.cookie, 'GET', confirmPath)).text();
    expect(page).toContain('<a id="cancel" href="/billing">Cancel and go back to billing</a>');
  });

  it('a viewer is not offered a deploy on the deployments page; a member is', async () => {
    const owner = await signedInOwner(server, 'deploy-offer@example.test');
    const viewer = await signedInTeammate(server, owner.tenantId, 'viewer', 'deploy-viewer@example.test');
    expect(await (await api(viewer, 'GET', '/deployments')).text()).not.toContain('Deploy a tool');
    expect(await (await api(owner.cookie, 'GET', '/deployments')).text()).toContain('Deploy a tool');
  });
});

describe("a form's workspace field", () => {
  it('that names no workspace (empty, not an id) is refused as from another workspace, never a 500', async () => {
    const owner = await signedInOwner(server, 'odd-workspace@example.test');
    const form = await openForm(owner, '/settings');
    for (const workspace of ['', 'not-a-workspace', '00000000-0000-0000-0000-000000000000']) {
      const sent = await form.send({ _action: 'rename-workspace', _workspace: workspace, name: 'Renamed' });
      expect(sent.status).toBe(409);
      expect(sent.text).toContain('This page was for another workspace');
    }
    const csrf = billingCsrfToken(owner.cookie.split('=')[1]!);
    const bought = await postForm(server.url, owner.cookie, '/billing/purchase', {
      csrf_token: csrf,
      workspace: 'not-a-workspace',
      pack: '5',
    });
    expect(bought.status).toBe(409);
    expect(await bought.text()).toContain('This page was for another workspace');
    const tenant = await store.db
      .selectFrom('tenants')
      .select('name')
      .where('id', '=', owner.tenantId)
      .executeTakeFirstOrThrow();
    expect(tenant.name).not.toBe('Renamed');
  });
});

describe('a form holding text the store cannot keep', () => {
  const NOT_KEPT = 'The form holds characters that cannot be kept';
  const userName = async (owner: SignedInOwner) =>
    ((await (await api(owner.cookie, 'GET', '/api/user/me')).json()) as { user: { name: string | null } })
      .user.name;

  it('is refused whole in the form’s words: bytes that are not UTF-8 (raw or percent-encoded), a NUL', async () => {
    const owner = await signedInOwner(server, 'not-utf8@example.test');
    const form = await openForm(owner, '/settings');
    const fixed = `_csrf=${hidden(form.page, '_csrf')}&_workspace=${owner.tenantId}&_action=rename-me&name=`;
    for (const tail of [Buffer.from([0xff, 0xfe, 0x41]), Buffer.from('%FF%FEA'), Buffer.from('%C3')]) {
      const sent = await postForm(
        server.url,
        owner.cookie,
        '/settings',
        Buffer.concat([Buffer.from(fixed), tail]),
      );
      expect(sent.status).toBe(400);
      expect(await sent.text()).toContain(NOT_KEPT);
      expect(await userName(owner)).toBeNull();
    }
    // A NUL in a name is refused by the page's check of names, naming the field.
    const named = await form.send({ _action: 'rename-me', _workspace: owner.tenantId, name: 'a\u0000b' });
    expect(named.status).toBe(400);
    expect(named.text).toContain('Your name must be 1 to 100 characters');
    // A NUL the page's own checks let through is refused before the API, not in its field path.
    const page = await openForm(owner, '/integrations/search');
    const nul = await page.send({
      _action: 'key',
      provider: 'search',
      api_key: 'sk-\u0000',
      display_name: 'Team',
    });
    expect(nul.status).toBe(400);
    expect(nul.text).toContain(NOT_KEPT);
    expect(nul.text).not.toMatch(/body\.credential|contains a NUL/);
    // Text any browser sends (accents, emoji, an encoded percent sign) is kept as typed.
    const fine = await form.send({ _action: 'rename-me', _workspace: owner.tenantId, name: 'Zoë 100% 🎉' });
    expect(fine.status).toBe(303);
    expect(await userName(owner)).toBe('Zoë 100% 🎉');
  });
});

describe("a select's value the page never offered", () => {
  it('is refused in the form’s words, never the API’s field path', async () => {
    const owner = await signedInOwner(server, 'odd-role@example.test');
    const mate = await signedInTeammate(server, owner.tenantId, 'member', 'odd-role-mate@example.test');
    const mateId = (
      (await (await api(mate, 'GET', '/api/user/me')).json()) as {
        user: { id: string };
      }
    ).user.id;
    const form = await openForm(owner, '/members');
    const sends: Record<string, string>[] = [
      { _action: 'invite', email: 'odd@example.test', role: 'admin' },
      { _action: 'invite', email: 'odd@example.test' },
      { _action: 'role', user: mateId, role: 'god' },
    ];
    for (const fields of sends) {
      const sent = await form.send({ _workspace: owner.tenantId, ...fields });
      expect(sent.status).toBe(400);
      expect(sent.text).toContain('Choose a role: owner, member or viewer.');
      expect(sent.text).not.toMatch(/role: Invalid|Invalid option/);
    }
    expect(await invitationLinks(owner)).toEqual([]);
  });
});

describe('the spend caps form', () => {
  it('takes up to five warnings written as whole percents, refusing more or other notations in its own words', async () => {
    const owner = await signedInOwner(server, 'caps-warnings@example.test');
    const form = await openForm(owner, '/billing');
    const caps = async () =>
      (
        (await (await api(owner.cookie, 'GET', '/api/billing/spend-caps')).json()) as {
          caps: { app_id: string; warn_pcts: number[] }[];
        }
      ).caps.find((cap) => cap.app_id === owner.appId)?.warn_pcts;
    const before = await caps();
    for (const warn of ['10, 20, 30, 40, 50, 60', '0x10', '1e1', '50.0', '+50']) {
      const sent = await form.send({
        _workspace: owner.tenantId,
        _action: 'caps',
        app: owner.appId,
        daily: '5',
        warn,
      });
      expect(sent.status).toBe(400);
      expect(sent.text).toContain('Warnings are whole percents from 1 to 99, like 50, 80, and at most five.');
      expect(sent.text).not.toMatch(/warn_pcts|Too big/);
      expect(await caps()).toEqual(before);
    }
    const saved = await form.send({
      _workspace: owner.tenantId,
      _action: 'caps',
      app: owner.appId,
      daily: '5',
      warn: '80, 50',
    });
    expect(saved.status).toBe(303);
    expect(await caps()).toEqual([50, 80]);
  });

  it('refuses a daily cap above the monthly one in its own words, and takes them equal', async () => {
    const owner = await signedInOwner(server, 'caps-order@example.test');
    const form = await openForm(owner, '/billing');
    const send = (daily: string, monthly: string) =>
      form.send({ _workspace: owner.tenantId, _action: 'caps', app: owner.appId, daily, monthly, warn: '' });
    const above = await send('50', '5');
    expect(above.status).toBe(400);
    expect(above.text).toContain('The daily cap is above the monthly cap');
    expect(above.text).not.toContain('daily_micros');
    const capsOf = async () =>
      (
        (await (await api(owner.cookie, 'GET', '/api/billing/spend-caps')).json()) as {
          caps: { app_id: string; daily_micros: number | null; monthly_micros: number | null }[];
        }
      ).caps.find((cap) => cap.app_id === owner.appId);
    expect(await capsOf()).toMatchObject({ daily_micros: null, monthly_micros: null });
    expect((await send('5', '5')).status).toBe(303);
    expect(await capsOf()).toMatchObject({ daily_micros: 5_000_000, monthly_micros: 5_000_000 });
  });

  it('saves the caps it shows: a cap set through the API to a fraction of a cent, down to the micro', async () => {
    const owner = await signedInOwner(server, 'caps-micros@example.test');
    const set = await api(
      owner.cookie,
      'PUT',
      '/api/billing/spend-caps',
      { app_id: owner.appId, daily_micros: 3600, monthly_micros: 1_234_567 },
      { origin: server.url },
    );
    expect(set.status).toBe(200);
    const form = await openForm(owner, '/billing');
    const shown = (name: string) =>
      new RegExp(`name="${name}"[^>]* value="([^"]*)"`).exec(form.page)?.[1] ?? '(none)';
    expect([shown('daily'), shown('monthly')]).toEqual(['0.0036', '1.234567']);
    // Sent back as shown, with only the warnings changed.
    const saved = await form.send({
      _workspace: owner.tenantId,
      _action: 'caps',
      app: owner.appId,
      daily: shown('daily'),
      monthly: shown('monthly'),
      warn: '90',
    });
    expect(saved.status, saved.text).toBe(303);
    const caps = (
      (await (await api(owner.cookie, 'GET', '/api/billing/spend-caps')).json()) as {
        caps: { app_id: string; daily_micros: number; monthly_micros: number; warn_pcts: number[] }[];
      }
    ).caps.find((cap) => cap.app_id === owner.appId);
    expect(caps).toMatchObject({ daily_micros: 3600, monthly_micros: 1_234_567, warn_pcts: [90] });
    // Finer than a micro is no sum of money.
    const finer = await form.send({
      _workspace: owner.tenantId,
      _action: 'caps',
      app: owner.appId,
      daily: '0.0000001',
      warn: '',
    });
    expect(finer.status).toBe(400);
    expect(finer.text).toContain('Enter caps in USD');
  });

  it('takes caps in the billions, up to the largest the API keeps, to the micro', async () => {
    const owner = await signedInOwner(server, 'caps-large@example.test');
    const form = await openForm(owner, '/billing');
    const send = (daily: string, monthly: string) =>
      form.send({ _workspace: owner.tenantId, _action: 'caps', app: owner.appId, daily, monthly, warn: '' });
    const saved = await send('25000000', '9007199254.740991');
    expect(saved.status, saved.text).toBe(303);
    const caps = (
      (await (await api(owner.cookie, 'GET', '/api/billing/spend-caps')).json()) as {
        caps: { app_id: string; daily_micros: number; monthly_micros: number }[];
      }
    ).caps.find((cap) => cap.app_id === owner.appId);
    expect(caps).toMatchObject({ daily_micros: 25_000_000_000_000, monthly_micros: Number.MAX_SAFE_INTEGER });
    // The form shows them as saved, so sending it back as it stands keeps them.
    const again = await openForm(owner, '/billing');
    expect(again.page).toContain('value="9007199254.740991"');
    const past = await send('', '9007199254.740992');
    expect(past.status).toBe(400);
    expect(past.text).toContain('A cap can be at most USD 9,007,199,254.740991');
    // Past it by whole digits too: the same words, not "enter caps in USD".
    const farPast = await send('99999999999', '');
    expect(farPast.status).toBe(400);
    expect(farPast.text).toContain('A cap can be at most USD 9,007,199,254.740991');
  });
});

describe('the deployment page', () => {
  it('refuses a secret name the API could not take in its own words, never as a missing deployment', async () => {
    const owner = await signedInOwner(server, 'secret-names@example.test');
    const form = await openForm(owner, `/deployments/${owner.appId}`);
    for (const name of ['   ', '.', '..', 'a b']) {
      const answer = await form.send({
        _workspace: owner.tenantId,
        _action: 'set-secret',
        id: owner.appId,
        name,
        value: 'v',
      });
      expect(answer.status, name).toBe(400);
      expect(answer.text, name).toContain(
        'A secret name is A-Z, 0-9 and _, up to 64 characters, starting with a letter.',
      );
    }
  });

  it('offers no Rotate on a key rotated already, here and on the keys page', async () => {
    const owner = await signedInOwner(server, 'rotated-twice@example.test');
    const keys = async () =>
      (
        (await (await api(owner.cookie, 'GET', '/api/keys')).json()) as {
          keys: { id: string; expiresAt: string | null }[];
        }
      ).keys;
    const [first] = await keys();
    const rotated = await api(
      owner.cookie,
      'POST',
      `/api/keys/${first!.id}/rotate`,
      {},
      { origin: server.url },
    );
    expect(rotated.status).toBe(201);
    const after = await keys();
    expect(after.find((key) => key.id === first!.id)?.expiresAt).not.toBeNull();
    const rowOf = (page: string, id: string) =>
      page.split('<tr').find((row) => row.includes(`value="${id}"`)) ?? '';
    const keysPage = (await openForm(owner, '/keys')).page;
    expect(rowOf(keysPage, first!.id)).toContain('Revoke');
    expect(rowOf(keysPage, first!.id)).not.toContain('Rotate');
    const replacement = after.find((key) => key.id !== first!.id)!;
    expect(rowOf(keysPage, replacement.id)).toContain('Rotate');
    const deploymentPage = (await openForm(owner, `/deployments/${owner.appId}`)).page;
    const oldRow = deploymentPage.split('<tr').find((row) => row.includes('rotated, works until'));
    expect(oldRow).toBeDefined();
    expect(oldRow).not.toContain('Rotate');
  });

  it('says a deleted deployment is deleted, on the list it lands on', async () => {
    const owner = await signedInOwner(server, 'deleted-deployment@example.test');
    const form = await openForm(owner, `/deployments/${owner.appId}`);
    const deleted = await form.send({ _workspace: owner.tenantId, _action: 'delete', id: owner.appId });
    expect(deleted.status).toBe(303);
    expect(deleted.location).toMatch(/\/deployments\?done=delete$/);
    const list = await (await api(owner.cookie, 'GET', deleted.location!)).text();
    expect(list).toContain('<p class="notice done" role="status">Deleted.</p>');
  });
});

describe('the keys page', () => {
  it("offers another owner's CLI key for revoking only, and refuses rotating it in its own words", async () => {
    const owner = await signedInOwner(server, 'keys-owner@example.test');
    const other = await signedInTeammate(server, owner.tenantId, 'owner', 'keys-other-owner@example.test');
    const theirs = (await (
      await api(other, 'POST', '/api/keys', { kind: 'cli' }, { origin: server.url })
    ).json()) as {
      key: { id: string; prefix: string };
    };
    const mine = (await (
      await api(owner.cookie, 'POST', '/api/keys', { kind: 'cli' }, { origin: server.url })
    ).json()) as {
      key: { id: string; prefix: string };
    };
    const form = await openForm(owner, '/keys');
    // A row is found by the key id its forms carry: a shown prefix may be shared by two keys.
    const rowOf = (id: string) => form.page.split('<tr').find((row) => row.includes(`value="${id}"`)) ?? '';
    expect(rowOf(theirs.key.id)).toContain('CLI key · held by another owner');
    expect(rowOf(theirs.key.id)).toContain(`${theirs.key.prefix}…`);
    expect(rowOf(theirs.key.id)).toContain('Revoke');
    expect(rowOf(theirs.key.id)).not.toContain('Rotate');
    expect(rowOf(mine.key.id)).toContain('Rotate');
    // A form sent by hand anyway is refused, saying what to do instead.
    const refused = await form.send({ _workspace: owner.tenantId, _action: 'rotate', id: theirs.key.id });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('revoke it instead');
  });
});

describe('a person signed in but in no workspace', () => {
  it('is told so on the sign-in page, with how to go on, not asked to sign in as if signed out', async () => {
    const owner = await signedInOwner(server, 'left-behind-owner@example.test');
    const leaver = await signedInTeammate(server, owner.tenantId, 'member', 'left-behind@example.test');
    const me = ((await (await api(leaver, 'GET', '/api/user/me')).json()) as { user: { id: string } }).user
      .id;
    // Their first workspace is gone (as its owners removing them would leave it), then this one.
    await store.db
      .deleteFrom('memberships')
      .where('user_id', '=', me)
      .where('tenant_id', '!=', owner.tenantId)
      .execute();
    const removed = await api(owner.cookie, 'DELETE', `/api/tenants/me/members/${me}`, undefined, {
      origin: server.url,
    });
    expect(removed.status).toBe(200);
    expect(
      ((await (await api(leaver, 'GET', '/api/tenants')).json()) as { tenants: unknown[] }).tenants,
    ).toEqual([]);
    const home = await api(leaver, 'GET', '/');
    expect(home.status).toBe(303);
    const signIn = await (await api(leaver, 'GET', home.headers.get('location')!)).text();
    expect(signIn).toContain(
      'You are signed in as left-behind@example.test, but you are not in any workspace now',
    );
    expect(signIn).toContain('Sign in again');
    expect(signIn).not.toContain('Sign in to manage your workspace');
  });
});

describe('the auto-reload form', () => {
  it('refuses a threshold outside what a reload can be, and a pack it never offered, in its own words', async () => {
    const owner = await signedInOwner(server, 'reload-words@example.test');
    const form = await openForm(owner, '/billing');
    for (const threshold of ['0.50', '1000.01', '9999999.99']) {
      const sent = await form.send({
        _workspace: owner.tenantId,
        _action: 'auto-reload',
        threshold,
        pack: '25',
      });
      expect(sent.status).toBe(400);
      expect(sent.text).toContain('Enter the threshold in USD from 1 to 1000, like 10 or 12.50.');
      expect(sent.text).not.toMatch(/autoReload|thresholdUsd/);
    }
    const pack = await form.send({
      _workspace: owner.tenantId,
      _action: 'auto-reload',
      threshold: '10',
      pack: '-3',
    });
    expect(pack.status).toBe(400);
    expect(pack.text).toContain('Choose one of the credit packs.');
    expect(pack.text).not.toMatch(/autoReload|Invalid input/);
  });
});
