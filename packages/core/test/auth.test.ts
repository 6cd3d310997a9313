import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../src/http/logger.js';
import { hashSecret } from '../src/identity/keys.js';
import { ConfigError } from '../src/platform/config.js';
import { createPlatform, type Platform } from '../src/platform/create-platform.js';
import { generateEncryptionKey } from '../src/store/sealing.js';
import { type FakeIdp, startFakeIdp } from './support/fake-idp.js';
import { openTestStore, type TestStore } from './support/stores.js';

const ORIGIN = 'http://localhost:8787';

let store: TestStore;
let platform: Platform;

beforeAll(async () => {
  store = await openTestStore();
  platform = await createPlatform({ store, logger: silentLogger, env: {} });
});
afterAll(async () => store?.dispose());

const call = (path: string, init: RequestInit = {}, on: Platform = platform) =>
  on.fetch(new Request(`${ORIGIN}${path}`, init));

/** A dev-IdP identity token, got the way a script would. */
async function devToken(email: string, on: Platform = platform): Promise<{ token: string; subject: string }> {
  const response = await call(
    '/auth/v1/token',
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) },
    on,
  );
  expect(response.status).toBe(200);
  const body = (await response.json()) as { access_token: string; user: { id: string } };
  return { token: body.access_token, subject: body.user.id };
}

/** The `name=value` pair of the session cookie a response sets, plus its attributes. */
function sessionCookieOf(response: Response): { pair: string; attributes: string[] } {
  const header = response.headers.getSetCookie().find((c) => c.startsWith('service_session='));
  expect(header, 'a service_session Set-Cookie').toBeDefined();
  const [pair, ...attributes] = header!.split(';').map((part) => part.trim());
  return { pair: pair!, attributes };
}

async function signIn(email: string, on: Platform = platform) {
  const { token, subject } = await devToken(email, on);
  const response = await call(
    '/api/auth/session',
    { method: 'POST', headers: { authorization: `Bearer ${token}` } },
    on,
  );
  return { response, subject, cookie: sessionCookieOf(response).pair };
}

const me = async (cookie?: string, headers: Record<string, string> = {}) => {
  const response = await call('/api/auth/me', { headers: { ...headers, ...(cookie ? { cookie } : {}) } });
  expect(response.status).toBe(200);
  expect(response.headers.get('cache-control')).toBe('no-store');
  return response.json();
};

describe('GET /api/auth/me', () => {
  it('answers an anonymous caller 200 loggedIn false with nulls and no-store', async () => {
    expect(await me()).toEqual({ loggedIn: false, userId: null, email: null });
  });

  it('answers loggedIn false for a garbage, unknown or oversized cookie, and clears it', async () => {
    for (const cookie of [
      'service_session=garbage',
      'service_session=',
      `service_session=${'x'.repeat(5000)}`,
    ]) {
      expect(await me(cookie)).toEqual({ loggedIn: false, userId: null, email: null });
    }
    const response = await call('/api/auth/me', { headers: { cookie: 'service_session=garbage' } });
    expect(sessionCookieOf(response).attributes).toContain('Max-Age=0');
  });

  it('ignores a bearer token: only the session cookie signs a browser in', async () => {
    const { token } = await devToken('bearer-only@example.test');
    expect(await me(undefined, { authorization: `Bearer ${token}` })).toEqual({
      loggedIn: false,
      userId: null,
      email: null,
    });
  });

  it('answers loggedIn false once the session has expired', async () => {
    const { cookie } = await signIn('expiring@example.test');
    expect((await me(cookie)).loggedIn).toBe(true);
    const token = cookie.slice('service_session='.length);
    await store.db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('token_hash', '=', hashSecret(token))
      .execute();
    expect(await me(cookie)).toEqual({ loggedIn: false, userId: null, email: null });
  });
});

describe('POST /api/auth/session', () => {
  it('signs in with a dev-IdP token; /api/auth/me then reports the JWT subject as userId', async () => {
    const { response, subject, cookie } = await signIn('Ada@Example.test');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ loggedIn: true, userId: subject, email: 'ada@example.test' });
    expect(await me(cookie)).toEqual({ loggedIn: true, userId: subject, email: 'ada@example.test' });
    // The raw IdP subject, not our internal user id.
    const user = await store.db
      .selectFrom('users')
      .select(['id', 'idp_subject'])
      .where('idp_subject', '=', subject)
      .executeTakeFirstOrThrow();
    expect(user.id).not.toBe(subject);
  });

  it('sets an HttpOnly, SameSite=Lax, Path=/ cookie for seven days, without Secure on http://localhost', async () => {
    const { response } = await signIn('cookie@example.test');
    const { pair, attributes } = sessionCookieOf(response);
    expect(pair).toMatch(/^service_session=[A-Za-z0-9_-]{43}$/);
    expect(attributes).toEqual(
      expect.arrayContaining(['HttpOnly', 'SameSite=Lax', 'Path=/', 'Max-Age=604800']),
    );
    expect(attributes).not.toContain('Secure');
  });

  it('adds Secure when the platform is served over https', async () => {
    const secure = await createPlatform({
      store,
      logger: silentLogger,
      env: {},
      baseUrl: 'https://platform.example',
    });
    const { response } = await signIn('secure@example.test', secure);
    expect(sessionCookieOf(response).attributes).toEqual(
      expect.arrayContaining(['Secure', 'HttpOnly', 'SameSite=Lax', 'Path=/']),
    );
  });

  it('creates the account once: signing in twice keeps one user and one tenant', async () => {
    const first = await signIn('twice@example.test');
    const second = await signIn('twice@example.test');
    expect(second.subject).toBe(first.subject);
    expect(second.cookie).not.toBe(first.cookie);
    const users = await store.db
      .selectFrom('users')
      .selectAll()
      .where('idp_subject', '=', first.subject)
      .execute();
    expect(users).toHaveLength(1);
    const memberships = await store.db
      .selectFrom('memberships')
      .selectAll()
      .where('user_id', '=', users[0]!.id)
      .execute();
    expect(memberships).toEqual([
      expect.objectContaining({ role: 'owner', tenant_id: users[0]!.default_tenant_id }),
    ]);
  });

  it('ends the session the browser already had when it signs in again', async () => {
    const first = await signIn('fixation@example.test');
    const { token } = await devToken('fixation@example.test');
    const again = await call('/api/auth/session', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, cookie: first.cookie },
    });
    expect(again.status).toBe(200);
    expect((await me(first.cookie)).loggedIn).toBe(false);
    expect((await me(sessionCookieOf(again).pair)).loggedIn).toBe(true);
  });

  it('answers 401 Unauthorized without a bearer, with a bad one, or with a token from an unknown key', async () => {
    const stranger = await generateKeyPair('ES256');
    const forged = await new SignJWT({ sub: 'forged', email: 'forged@example.test' })
      .setProtectedHeader({ alg: 'ES256', kid: 'dev-es256-1' })
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(stranger.privateKey);
    for (const headers of [
      {},
      { authorization: 'Bearer' },
      { authorization: 'Basic abc' },
      { authorization: 'Bearer not.a.jwt' },
      { authorization: `Bearer ${forged}` },
    ] as Record<string, string>[]) {
      const response = await call('/api/auth/session', { method: 'POST', headers });
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ message: 'Unauthorized' });
      expect(response.headers.getSetCookie()).toEqual([]);
    }
  });
});

describe('signing out', () => {
  it('ends the session with DELETE /api/auth/session; /api/auth/me then answers loggedIn false', async () => {
    const { cookie } = await signIn('bye@example.test');
    const response = await call('/api/auth/session', { method: 'DELETE', headers: { cookie } });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ loggedIn: false });
    expect(sessionCookieOf(response).attributes).toEqual(
      expect.arrayContaining(['Max-Age=0', 'HttpOnly', 'Path=/']),
    );
    // Replaying the old cookie does not bring the session back.
    expect(await me(cookie)).toEqual({ loggedIn: false, userId: null, email: null });
  });

  it('ends the session with the POST /api/auth/sign-out alias', async () => {
    const { cookie } = await signIn('alias@example.test');
    const response = await call('/api/auth/sign-out', {
      method: 'POST',
      headers: { cookie, origin: ORIGIN },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ loggedIn: false });
    expect((await me(cookie)).loggedIn).toBe(false);
  });

  it('is idempotent, with or without a cookie', async () => {
    const { cookie } = await signIn('idem@example.test');
    for (const headers of [{ cookie }, { cookie }, {}] as Record<string, string>[]) {
      const response = await call('/api/auth/session', { method: 'DELETE', headers });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ loggedIn: false });
    }
  });

  it('refuses a cross-origin sign-out and keeps the session', async () => {
    const { cookie } = await signIn('csrf-out@example.test');
    const response = await call('/api/auth/sign-out', {
      method: 'POST',
      headers: { cookie, origin: 'https://evil.example' },
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ message: 'Cross-origin request refused' });
    expect((await me(cookie)).loggedIn).toBe(true);
  });
});

describe('development identity provider routes', () => {
  it('serves its public key set with a ten-minute cache', async () => {
    const response = await call('/auth/v1/.well-known/jwks.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=600');
    const { keys } = (await response.json()) as { keys: Record<string, unknown>[] };
    expect(keys).toEqual([expect.objectContaining({ kty: 'EC', alg: 'ES256', kid: expect.any(String) })]);
    expect(keys[0]).not.toHaveProperty('d');
  });

  it('issues a bearer token for an email via POST /auth/v1/token', async () => {
    const response = await call('/auth/v1/token', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'Script@Example.test', name: 'Script' }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({
      access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      token_type: 'bearer',
      expires_in: 3600,
      user: { id: expect.stringMatching(/^[0-9a-f-]{36}$/), email: 'script@example.test' },
    });
  });

  it('answers 400 with a flat message for bad token requests, never 500', async () => {
    const cases: Array<[string, RegExp]> = [
      ['{"email":', /JSON/],
      ['', /JSON/],
      ['null', /JSON object/],
      ['[]', /JSON object/],
      ['{}', /email is required/],
      ['{"email":42}', /email must be a string/],
      ['{"email":"not-an-email"}', /email is not a valid address/],
      [JSON.stringify({ email: `${'a'.repeat(1000)}@example.test` }), /email is too long/],
      [JSON.stringify({ email: 'ok@example.test', name: 'n'.repeat(500) }), /name is too long/],
    ];
    for (const [body, message] of cases) {
      const response = await call('/auth/v1/token', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(response.status, body.slice(0, 40)).toBe(400);
      const json = (await response.json()) as { message: string };
      expect(Object.keys(json)).toEqual(['message']);
      expect(json.message).toMatch(message);
    }
  });

  it('refuses an oversized token request body with 413', async () => {
    const response = await call('/auth/v1/token', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'x@example.test', pad: 'p'.repeat(100_000) }),
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ message: 'Request body too large' });
  });

  it('renders the sign-in page with a strict CSP, no-store and the return path escaped in a field', async () => {
    const response = await call('/auth/v1/sign-in?return_to=/api/auth/me%3Fa%3D1%26b%3D%22x%22');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("form-action 'self'");
    expect(csp).not.toContain('script-src');
    const html = await response.text();
    // The path as a URL parser writes it (the quotes percent-encoded), then escaped for HTML.
    expect(html).toContain('name="return_to" value="/api/auth/me?a=1&amp;b=%22x%22"');
    expect(html).not.toContain('<script');
  });

  it('escapes a hostile login hint', async () => {
    const hint = encodeURIComponent('"><img src=x onerror=alert(1)>');
    const html = await (await call(`/auth/v1/sign-in?login_hint=${hint}`)).text();
    expect(html).toContain('value="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"');
    expect(html).not.toContain('<img');
  });

  it('signs the browser in from the form and redirects 303 to the return path', async () => {
    const response = await call('/auth/v1/sign-in', {
      method: 'POST',
      headers: { origin: ORIGIN },
      body: new URLSearchParams({ email: 'Form@Example.test', return_to: '/api/auth/me' }),
    });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/api/auth/me');
    const { pair, attributes } = sessionCookieOf(response);
    expect(attributes).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Lax', 'Path=/']));
    const { subject } = await devToken('form@example.test');
    expect(await me(pair)).toEqual({ loggedIn: true, userId: subject, email: 'form@example.test' });
  });

  it('redirects to / instead of off-site for a hostile return path', async () => {
    for (const returnTo of [
      '//evil.example',
      'https://evil.example',
      '/\\evil.example',
      '/\t/evil.example',
    ]) {
      const response = await call('/auth/v1/sign-in', {
        method: 'POST',
        body: new URLSearchParams({ email: 'redirect@example.test', return_to: returnTo }),
      });
      expect(response.status).toBe(303);
      expect(response.headers.get('location')).toBe('/');
    }
  });

  it('refuses a cross-origin sign-in form post without setting a cookie', async () => {
    for (const origin of ['https://evil.example', 'null', 'http://localhost:9999']) {
      const response = await call('/auth/v1/sign-in', {
        method: 'POST',
        headers: { origin },
        body: new URLSearchParams({ email: 'victim@example.test', return_to: '/' }),
      });
      expect(response.status).toBe(403);
      expect(response.headers.getSetCookie()).toEqual([]);
    }
  });

  it('re-renders the form with 400 and the submitted value escaped for an invalid email', async () => {
    const response = await call('/auth/v1/sign-in', {
      method: 'POST',
      body: new URLSearchParams({ email: '<script>alert(1)</script>', return_to: '/x' }),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(response.headers.getSetCookie()).toEqual([]);
    const html = await response.text();
    expect(html).toContain('value="&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(html).not.toContain('<script>');
    expect(html).toContain('email is not a valid address');
  });
});

describe('platform configuration', () => {
  it('refuses to start in production without an identity provider URL', async () => {
    await expect(createPlatform({ store, logger: silentLogger, env: {}, production: true })).rejects.toThrow(
      ConfigError,
    );
    await expect(
      createPlatform({ store, logger: silentLogger, env: { NODE_ENV: 'production' } }),
    ).rejects.toThrow(/SERVICE_IDP_URL/);
  });

  it('refuses to start in production without a store encryption key', async () => {
    await expect(
      createPlatform({
        store,
        logger: silentLogger,
        env: {},
        production: true,
        idpUrl: 'https://idp.example',
      }),
    ).rejects.toThrow(/SERVICE_STORE_ENCRYPTION_KEY/);
  });

  describe('with an external identity provider', () => {
    let idp: FakeIdp;
    let external: Platform;
    beforeAll(async () => {
      idp = await startFakeIdp();
      external = await createPlatform({
        store,
        logger: silentLogger,
        env: {},
        baseUrl: 'https://platform.example',
        idpUrl: idp.url,
        production: true,
        encryptionKey: generateEncryptionKey(),
      });
    });
    afterAll(async () => idp?.close());

    it('marks every answer nosniff, and tells browsers to keep to HTTPS in production on HTTPS', async () => {
      for (const path of ['/healthz', '/api/billing/balance', '/api/integrations', '/no-such-route']) {
        const answer = await call(path, {}, external);
        expect(answer.headers.get('x-content-type-options'), path).toBe('nosniff');
        expect(answer.headers.get('strict-transport-security'), path).toBe('max-age=31536000');
        // Outside production (and on plain HTTP) no HSTS: it would pin a developer's localhost.
        const local = await call(path, {});
        expect(local.headers.get('x-content-type-options'), path).toBe('nosniff');
        expect(local.headers.get('strict-transport-security'), path).toBeNull();
      }
    });

    it('does not mount the development IdP', async () => {
      expect(external.devIdp).toBeNull();
      for (const [method, path] of [
        ['GET', '/auth/v1/.well-known/jwks.json'],
        ['POST', '/auth/v1/token'],
        ['GET', '/auth/v1/sign-in'],
        ['POST', '/auth/v1/sign-in'],
      ] as const) {
        const response = await call(path, { method, body: method === 'POST' ? '{}' : null }, external);
        expect(response.status, `${method} ${path}`).toBe(404);
      }
    });

    it('signs in with a token from that IdP and refuses dev-IdP tokens', async () => {
      const token = await idp.sign({
        sub: '7d7a1a52-4c1e-4f7e-9a61-1b2f3c4d5e6f',
        email: 'ext@example.test',
      });
      const response = await call(
        '/api/auth/session',
        { method: 'POST', headers: { authorization: `Bearer ${token}` } },
        external,
      );
      expect(response.status).toBe(200);
      const cookie = sessionCookieOf(response);
      expect(cookie.attributes).toContain('Secure');
      const check = await call('/api/auth/me', { headers: { cookie: cookie.pair } }, external);
      expect(await check.json()).toEqual({
        loggedIn: true,
        userId: '7d7a1a52-4c1e-4f7e-9a61-1b2f3c4d5e6f',
        email: 'ext@example.test',
      });
      const { token: devIssued } = await devToken('dev@example.test');
      const refused = await call(
        '/api/auth/session',
        { method: 'POST', headers: { authorization: `Bearer ${devIssued}` } },
        external,
      );
      expect(refused.status).toBe(401);
    });
  });
});
