/**
 * `/dev/cli-bootstrap` over real HTTP: the loopback URL rules, sign-in, CSRF, key minting and the
 * delivery page. The whole login in a browser with the real CLI is in
 * packages/dev-cli/test/login.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningPlatform, startPlatform } from '../support/platform.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { deliveredLogin, formFields, signIn } from './support.js';

let store: TestStore;
let running: RunningPlatform;
const CB = 'http://127.0.0.1:49152/done';
const page = (cb: string = CB, mode = 'personal-key') =>
  `/dev/cli-bootstrap?${new URLSearchParams({ cb, mode })}`;

beforeAll(async () => {
  store = await openTestStore();
  running = await startPlatform(store);
});
afterAll(async () => {
  await running?.close();
  await store?.dispose();
});

const get = (path: string, cookie?: string) =>
  fetch(`${running.url}${path}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });

const issue = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${running.url}/dev/cli-bootstrap`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: running.url, ...headers },
    body: new URLSearchParams(fields),
  });

const cliBalance = (key: string) =>
  fetch(`${running.url}/api/cli/balance`, { headers: { authorization: `Bearer ${key}` } });

/** Signs in, loads the consent page and returns its form fields. */
async function consent(email: string, cb = CB) {
  const session = await signIn(running, email);
  const response = await get(page(cb), session.cookie);
  expect(response.status).toBe(200);
  return { session, fields: formFields(await response.text()) };
}

describe('GET /dev/cli-bootstrap', () => {
  it('accepts only http://127.0.0.1:<port>/done and http://localhost:<port>/done as cb', async () => {
    const { cookie } = await signIn(running, 'cb-rules@example.test');
    for (const cb of ['http://127.0.0.1:1/done', 'http://localhost:65535/done']) {
      expect((await get(page(cb), cookie)).status, cb).toBe(200);
    }
    for (const cb of [
      '',
      'https://127.0.0.1:8000/done',
      'http://127.0.0.1/done',
      'http://127.0.0.1:0/done',
      'http://127.0.0.1:65536/done',
      'http://127.0.0.1:8000/done/',
      'http://127.0.0.1:8000/done?x=1',
      'http://127.0.0.1:8000/done#x',
      'http://127.0.0.1:8000/other',
      'http://evil.example:8000/done',
      'http://127.0.0.1.evil.example:8000/done',
      'http://user@127.0.0.1:8000/done',
      'http://[::1]:8000/done',
      'http://127.0.0.2:8000/done',
      'javascript:alert(1)//127.0.0.1:8000/done',
    ]) {
      const response = await get(page(cb), cookie);
      expect(response.status, cb).toBe(400);
      expect(await response.text()).toContain('The cb parameter must be the loopback address');
    }
    expect((await get('/dev/cli-bootstrap', cookie)).status).toBe(400);
  });

  it('refuses a mode other than personal-key and treats a missing mode as personal-key', async () => {
    const { cookie } = await signIn(running, 'modes@example.test');
    const other = await get(page(CB, 'org-key'), cookie);
    expect(other.status).toBe(400);
    expect(await other.text()).toContain('Unsupported mode');
    expect((await get(`/dev/cli-bootstrap?cb=${encodeURIComponent(CB)}`, cookie)).status).toBe(200);
  });

  it('sends a signed-out browser to the development sign-in, returning here afterwards', async () => {
    const response = await get(page());
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location')!, running.url);
    expect(location.pathname).toBe('/auth/v1/sign-in');
    expect(location.searchParams.get('return_to')).toBe(page());
  });

  it('asks the user to sign in first when no development IdP runs', async () => {
    const other = await openTestStore();
    const external = await startPlatform(other, { idpUrl: 'http://127.0.0.1:9/unused' });
    try {
      const response = await fetch(`${external.url}${page()}`, { redirect: 'manual' });
      expect(response.status).toBe(401);
      expect(await response.text()).toContain('Sign in to');
    } finally {
      await external.close();
      await other.dispose();
    }
  });

  it('shows who is signed in, the port, and a form carrying the cb and a CSRF token', async () => {
    const { session, fields } = await consent('consent@example.test');
    const response = await get(page(), session.cookie);
    const html = await response.text();
    expect(html).toContain('consent@example.test');
    expect(html).toContain('<strong id="port">49152</strong>');
    expect(fields).toEqual({
      cb: CB,
      mode: 'personal-key',
      csrf_token: expect.stringMatching(/^[\w-]{43}$/),
    });
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    // The consent page runs no script at all.
    expect(response.headers.get('content-security-policy')).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    expect(html).not.toContain('<script');
  });

  it('escapes a hostile workspace name', async () => {
    const { session } = await consent('hostile@example.test');
    const user = await store.db
      .selectFrom('users')
      .select('default_tenant_id')
      .where('email', '=', 'hostile@example.test')
      .executeTakeFirstOrThrow();
    await store.db
      .updateTable('tenants')
      .set({ name: '<img src=x onerror=alert(1)>"\'&' })
      .where('id', '=', user.default_tenant_id!)
      .execute();
    const html = await (await get(page(), session.cookie)).text();
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;');
    expect(html).not.toContain('<img');
  });
});

describe('POST /dev/cli-bootstrap', () => {
  it('mints a CLI key and answers a page that posts { apiKey, tenantId, appId, email, issuedAt } to cb', async () => {
    const { session, fields } = await consent('Issue@Example.test');
    const response = await issue(fields, { cookie: session.cookie });
    expect(response.status).toBe(200);
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]{24}'/);
    expect(csp).toContain('connect-src http://127.0.0.1:49152;');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const html = await response.text();
    const nonce = /'nonce-([^']+)'/.exec(csp)![1];
    expect(html).toContain(`<script nonce="${nonce}">`);

    const login = deliveredLogin(html);
    expect(login.cb).toBe(CB);
    const user = await store.db
      .selectFrom('users')
      .select(['id', 'default_tenant_id'])
      .where('email', '=', 'issue@example.test')
      .executeTakeFirstOrThrow();
    expect(login.payload).toEqual({
      apiKey: expect.stringMatching(/^service_sk_[\w-]{43}$/),
      tenantId: user.default_tenant_id,
      appId: null,
      email: 'issue@example.test',
      issuedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(JSON.parse(Buffer.from(login.code, 'base64url').toString('utf8'))).toEqual(login.payload);
    expect((await cliBalance(login.payload.apiKey)).status).toBe(200);

    const keys = await store.db
      .selectFrom('api_keys')
      .select(['kind', 'user_id', 'tenant_id', 'key_hash'])
      .where('user_id', '=', user.id)
      .execute();
    expect(keys).toEqual([
      expect.objectContaining({ kind: 'cli', user_id: user.id, tenant_id: user.default_tenant_id }),
    ]);
    // Only the hash is stored.
    expect(JSON.stringify(keys)).not.toContain(login.payload.apiKey);
  });

  it("revokes the account's previous CLI key when it issues a new one", async () => {
    const { session, fields } = await consent('twice@example.test');
    const first = deliveredLogin(await (await issue(fields, { cookie: session.cookie })).text());
    const second = deliveredLogin(await (await issue(fields, { cookie: session.cookie })).text());
    expect(second.payload.apiKey).not.toBe(first.payload.apiKey);
    expect((await cliBalance(first.payload.apiKey)).status).toBe(401);
    expect((await cliBalance(second.payload.apiKey)).status).toBe(200);
  });

  it('ends with one live CLI key when two issues race for one account', async () => {
    const { session, fields } = await consent('race@example.test');
    const pages = await Promise.all([1, 2, 3].map(() => issue(fields, { cookie: session.cookie })));
    const keys = await Promise.all(pages.map(async (p) => deliveredLogin(await p.text()).payload.apiKey));
    const statuses = await Promise.all(keys.map(async (key) => (await cliBalance(key)).status));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    const live = await store.db
      .selectFrom('api_keys')
      .innerJoin('users', 'users.id', 'api_keys.user_id')
      .select('api_keys.id')
      .where('users.email', '=', 'race@example.test')
      .where('api_keys.revoked_at', 'is', null)
      .execute();
    expect(live).toHaveLength(1);
  });

  it('refuses a wrong or missing CSRF token, and a cross-origin post, without minting', async () => {
    const { session, fields } = await consent('csrf@example.test');
    const other = await consent('csrf-other@example.test');
    const attempts = [
      issue({ ...fields, csrf_token: 'forged' }, { cookie: session.cookie }),
      issue({ cb: CB, mode: 'personal-key' }, { cookie: session.cookie }),
      // Another session's token does not work with this session.
      issue({ ...fields, csrf_token: other.fields.csrf_token! }, { cookie: session.cookie }),
      issue(fields, { cookie: session.cookie, origin: 'https://evil.example' }),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(403);
      expect(await response.text()).not.toContain('service_sk_');
    }
    const keys = await store.db
      .selectFrom('api_keys')
      .innerJoin('users', 'users.id', 'api_keys.user_id')
      .select('api_keys.id')
      .where('users.email', '=', 'csrf@example.test')
      .execute();
    expect(keys).toEqual([]);
  });

  it('refuses a signed-out post, a bad cb and an oversized form', async () => {
    const { session, fields } = await consent('post-rules@example.test');
    expect((await issue(fields)).status).toBe(401);
    expect(
      (await issue({ ...fields, cb: 'http://evil.example:1/done' }, { cookie: session.cookie })).status,
    ).toBe(400);
    expect((await issue({ ...fields, padding: 'x'.repeat(20_000) }, { cookie: session.cookie })).status).toBe(
      413,
    );
  });
});
