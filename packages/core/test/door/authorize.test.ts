/**
 * `/authorize`: errors before the redirect URI is trusted answer a 400 page and never redirect;
 * PKCE is S256 with a 43-character challenge; consent has a CSRF token and a single-use
 * transaction; the host adapter contract (`session`, optional `authorize`, legacy `authorize`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import {
  authorizeCode,
  authorizeUrl,
  exchange,
  openConsent,
  pkce,
  postConsent,
  register,
  signIn,
  type TestClient,
} from './support/oauth-flow.js';

let store: TestStore;
let host: DoorHost;
let client: TestClient;
const { challenge } = pkce();

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store);
  client = await register(host);
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

const get = (url: string, cookie = signIn(host, 'user-1')) =>
  fetch(url, { headers: { cookie }, redirect: 'manual' });

describe('authorization request errors before the redirect URI is trusted', () => {
  it.each([
    [{ client_id: null }, 'client_id is required'],
    [{ redirect_uri: null }, 'redirect_uri is required'],
    [{ client_id: 'mcp_client_unknown' }, 'Unknown client_id'],
  ])('answers %j with a 400 page, never a redirect', async (extra, text) => {
    const response = await get(authorizeUrl(host, client, challenge, extra));
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(response.headers.get('content-type')).toContain('text/html');
    const page = await response.text();
    expect(page).toContain(text);
    expect(page).toContain('<code>invalid_request</code>');
  });

  it.each([
    `${'https://attacker.example/callback'}`,
    'CALLBACK_WITH_SUFFIX',
    'CALLBACK_WITH_QUERY',
    'CALLBACK_UPPERCASE',
  ])('refuses a redirect URI that does not match exactly (%s) without redirecting', async (variant) => {
    const redirect =
      variant === 'CALLBACK_WITH_SUFFIX'
        ? `${client.redirectUri}/extra`
        : variant === 'CALLBACK_WITH_QUERY'
          ? `${client.redirectUri}?next=https://attacker.example`
          : variant === 'CALLBACK_UPPERCASE'
            ? client.redirectUri.replace('callback', 'CALLBACK')
            : variant;
    const response = await get(
      authorizeUrl(host, client, challenge, { redirect_uri: redirect, response_type: 'token' }),
    );
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('redirect_uri does not match');
  });

  it.each([
    ['client_id', { client_id: 'mcp_client_\u0000' }],
    ['state', { state: 'state\u0000' }],
    ['scope', { scope: 'read\u0000' }],
  ])('answers a NUL character in %s with a 400 page, never a 500 or a redirect', async (name, extra) => {
    const response = await get(authorizeUrl(host, client, challenge, extra));
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain(`${name} contains a NUL character or invalid Unicode`);
  });

  it('refuses a repeated parameter with a 400 page', async () => {
    const response = await get(`${authorizeUrl(host, client, challenge)}&client_id=${client.clientId}`);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });
});

describe('authorization request errors once the signed-in user approved the client', () => {
  // Only then is the redirect URI trusted enough to send an error back without a click.
  beforeAll(async () => {
    await authorizeCode(host, 'user-1', client);
  });

  const redirected = async (extra: Record<string, string | null>) => {
    const response = await get(authorizeUrl(host, client, challenge, extra));
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location')!);
    expect(location.origin + location.pathname).toBe(client.redirectUri);
    expect(location.searchParams.get('state')).toBe('state-123');
    expect(location.searchParams.get('iss')).toBe(`${host.url}/api/service/mcp`);
    expect(location.searchParams.get('code')).toBeNull();
    return {
      error: location.searchParams.get('error'),
      text: location.searchParams.get('error_description'),
    };
  };

  it.each([
    ['plain method', { code_challenge_method: 'plain' }],
    ['missing method', { code_challenge_method: null }],
    ['lowercase s256', { code_challenge_method: 's256' }],
    ['missing challenge', { code_challenge: null }],
    ['42-character challenge', { code_challenge: 'a'.repeat(42) }],
    ['44-character challenge', { code_challenge: 'a'.repeat(44) }],
    ['non-base64url challenge', { code_challenge: `${'a'.repeat(42)}=` }],
  ])('redirects back with invalid_request for a %s', async (_, extra) => {
    expect(await redirected(extra)).toEqual({ error: 'invalid_request', text: 'PKCE with S256 is required' });
  });

  it('redirects back with unsupported_response_type', async () => {
    expect((await redirected({ response_type: 'token' })).error).toBe('unsupported_response_type');
  });

  it('redirects back with invalid_scope for a scope the door does not grant', async () => {
    expect(await redirected({ scope: 'read admin' })).toEqual({
      error: 'invalid_scope',
      text: 'Unknown scope: admin',
    });
  });

  it("applies the client's registered scope when the scope parameter is empty", async () => {
    const reader = await register(host, { scope: 'read' });
    for (const scope of ['', '  ']) {
      const ticket = await openConsent(
        authorizeUrl(host, reader, challenge, { scope }),
        signIn(host, 'user-1'),
      );
      expect(ticket.response.status, JSON.stringify(scope)).toBe(200);
      expect(ticket.html).toContain('<strong>read</strong>');
      expect(ticket.html).not.toContain('<strong>write</strong>');
    }
  });

  it('accepts offline_access and grants only the scopes beside it (or the default when alone)', async () => {
    const reader = await register(host, { scope: 'read' });
    for (const [scope, shown] of [
      ['read offline_access', 'read'],
      ['offline_access', 'read'],
      ['offline_access read write', null],
    ] as const) {
      const ticket = await openConsent(
        authorizeUrl(host, reader, challenge, { scope }),
        signIn(host, 'user-1'),
      );
      if (shown === null) {
        // Still the registered scope that bounds what may be asked for.
        expect(ticket.response.status, scope).toBe(400);
        expect(ticket.html).toContain('invalid_scope');
        continue;
      }
      expect(ticket.response.status, scope).toBe(200);
      expect(ticket.html).toContain('<strong>read</strong>');
      expect(ticket.html).not.toContain('offline_access');
    }
    const flow = await authorizeCode(host, 'offline-user', undefined, { scope: 'write offline_access' });
    const tokens = await exchange(host, flow);
    expect(tokens.scope).toBe('write');
    expect(tokens.refresh_token).toMatch(/^mcp_rt_/);
  });

  it('redirects back with invalid_target for another resource', async () => {
    expect((await redirected({ resource: 'https://other.example/mcp' })).error).toBe('invalid_target');
  });
});

describe('sign-in and consent', () => {
  it('forwards the adapter redirect to sign in, with the canonical authorize URL to come back to', async () => {
    const url = authorizeUrl(host, client, challenge);
    const response = await fetch(url, { redirect: 'manual' });
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location')!);
    expect(location.pathname).toBe('/sign-in');
    expect(location.searchParams.get('return_to')).toBe(url);
  });

  it('renders the consent page with a strict CSP, no-store and the client name escaped', async () => {
    const hostile = await register(host, {
      client_name: '<script>alert("pwned")</script><img src=x onerror=alert(1)>',
    });
    const ticket = await openConsent(authorizeUrl(host, hostile, challenge), signIn(host, 'user-1'));
    expect(ticket.response.status).toBe(200);
    expect(ticket.response.headers.get('cache-control')).toBe('no-store');
    const csp = ticket.response.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain(`form-action 'self' ${new URL(hostile.redirectUri).origin}`);
    expect(ticket.html).not.toContain('<script>');
    expect(ticket.html).not.toContain('<img src=x');
    expect(ticket.html).toContain('&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;');
    expect(ticket.transaction).toMatch(/^mcp_tx_/);
    expect(ticket.csrfToken).toMatch(/^mcp_csrf_/);
  });

  it('refuses consent to a signed-in user whose principal does not resolve', async () => {
    const orphaned = await startDoorHost(store, { oauth: { session: () => ({ subject: 'ghost' }) } });
    try {
      const orphanClient = await register(orphaned);
      const response = await fetch(authorizeUrl(orphaned, orphanClient, challenge), { redirect: 'manual' });
      expect(response.status).toBe(403);
      expect(response.headers.get('location')).toBeNull();
    } finally {
      await orphaned.close();
    }
  });

  it('redirects with access_denied and the state when the user denies', async () => {
    const cookie = signIn(host, 'user-1');
    const ticket = await openConsent(authorizeUrl(host, client, challenge), cookie);
    const response = await postConsent(host, cookie, {
      transaction: ticket.transaction,
      csrf_token: ticket.csrfToken,
      decision: 'deny',
    });
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('access_denied');
    expect(location.searchParams.get('state')).toBe('state-123');
    expect(location.searchParams.get('code')).toBeNull();
  });

  it('answers a consent transaction once: a second post of the same form is refused', async () => {
    const cookie = signIn(host, 'user-1');
    const ticket = await openConsent(authorizeUrl(host, client, challenge), cookie);
    const fields = { transaction: ticket.transaction, csrf_token: ticket.csrfToken, decision: 'approve' };
    expect((await postConsent(host, cookie, fields)).status).toBe(303);
    const replay = await postConsent(host, cookie, fields);
    expect(replay.status).toBe(400);
    expect(replay.headers.get('location')).toBeNull();
    expect(await replay.text()).toContain('expired or was already answered');
  });

  it('refuses a wrong CSRF token without spending the transaction', async () => {
    const cookie = signIn(host, 'user-1');
    const ticket = await openConsent(authorizeUrl(host, client, challenge), cookie);
    const wrong = await postConsent(host, cookie, {
      transaction: ticket.transaction,
      csrf_token: 'mcp_csrf_forged',
      decision: 'approve',
    });
    expect(wrong.status).toBe(403);
    // Said as it is: the request has neither expired nor been answered.
    expect(await wrong.text()).toContain('did not come from this authorization page');
    const right = await postConsent(host, cookie, {
      transaction: ticket.transaction,
      csrf_token: ticket.csrfToken,
      decision: 'approve',
    });
    expect(right.status).toBe(303);
    expect(new URL(right.headers.get('location')!).searchParams.get('code')).toMatch(/^mcp_code_/);
  });

  it('answers a consent transaction only at the door that opened it, when doors share a store', async () => {
    const otherDoor = await startDoorHost(store);
    try {
      const cookie = signIn(host, 'user-1');
      signIn(otherDoor, 'user-1');
      const ticket = await openConsent(authorizeUrl(host, client, challenge), cookie);
      const fields = { transaction: ticket.transaction, csrf_token: ticket.csrfToken, decision: 'approve' };
      const elsewhere = await postConsent(otherDoor, cookie, fields);
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.headers.get('location')).toBeNull();
      // Not spent: the door that opened it still takes it.
      const here = await postConsent(host, cookie, fields);
      expect(here.status).toBe(303);
      expect(new URL(here.headers.get('location')!).searchParams.get('code')).toMatch(/^mcp_code_/);
    } finally {
      await otherDoor.close();
    }
  });

  it('refuses a decision posted from another site, by another user, or without its fields', async () => {
    const cookie = signIn(host, 'user-1');
    const ticket = await openConsent(authorizeUrl(host, client, challenge), cookie);
    const fields = { transaction: ticket.transaction, csrf_token: ticket.csrfToken, decision: 'approve' };
    expect((await postConsent(host, cookie, fields, { origin: 'https://evil.example' })).status).toBe(403);
    expect(
      (await postConsent(host, cookie, { transaction: ticket.transaction, decision: 'approve' })).status,
    ).toBe(400);
    expect((await postConsent(host, cookie, { ...fields, decision: 'maybe' })).status).toBe(400);
    // A field sent twice (which decision was meant?) is refused, and spends nothing.
    const twice = await fetch(`${host.url}/api/service/mcp/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: `${new URLSearchParams({ ...fields, decision: 'deny' })}&decision=approve`,
      redirect: 'manual',
    });
    expect(twice.status).toBe(400);
    expect(await twice.text()).toContain('each of its fields once');
    const other = await postConsent(host, signIn(host, 'user-2'), fields);
    expect(other.status).toBe(403);
    expect(other.headers.get('location')).toBeNull();
    const json = await fetch(`${host.url}/api/service/mcp/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie },
      body: JSON.stringify(fields),
    });
    expect(json.status).toBe(400);
    // None of those spent the request: its own user still answers it.
    const own = await postConsent(host, cookie, fields);
    expect(own.status).toBe(303);
    expect(new URL(own.headers.get('location')!).searchParams.get('code')).toMatch(/^mcp_code_/);
  });

  it('expires a consent transaction after ten minutes', async () => {
    const cookie = signIn(host, 'user-1');
    const ticket = await openConsent(authorizeUrl(host, client, challenge), cookie);
    host.clock.advance(10 * 60 * 1000 + 1000);
    const late = await postConsent(host, cookie, {
      transaction: ticket.transaction,
      csrf_token: ticket.csrfToken,
      decision: 'approve',
    });
    expect(late.status).toBe(400);
  });
});

describe('host adapters', () => {
  it('lets oauth.authorize render the consent page in the host look, and checks its form the same way', async () => {
    const seen: Array<{ clientName: string; scopes: string[] }> = [];
    const custom = await startDoorHost(store, {
      oauth: {
        authorize: (_request, { clientName, scopes, consent }) => {
          seen.push({ clientName, scopes });
          return new Response(
            `<form action="${consent!.action}"><input name="transaction" value="${consent!.transaction}"><input name="csrf_token" value="${consent!.csrfToken}"></form>`,
            { headers: { 'content-type': 'text/html' } },
          );
        },
      },
    });
    try {
      const customClient = await register(custom, { client_name: 'Custom page client' });
      const pair = pkce();
      const cookie = signIn(custom, 'user-9');
      const ticket = await openConsent(authorizeUrl(custom, customClient, pair.challenge), cookie);
      expect(seen).toEqual([{ clientName: 'Custom page client', scopes: ['read', 'write'] }]);
      const answer = await postConsent(custom, cookie, {
        transaction: ticket.transaction,
        csrf_token: ticket.csrfToken,
        decision: 'approve',
      });
      const code = new URL(answer.headers.get('location')!).searchParams.get('code')!;
      const tokens = await exchange(custom, { code, client: customClient, pkce: pair });
      expect(tokens.access_token).toMatch(/^mcp_at_/);
    } finally {
      await custom.close();
    }
  });

  it('lets a legacy adapter (authorize without session) own consent and answer { subject }', async () => {
    let approve = false;
    const legacy = await startDoorHost(store, {
      oauth: {
        withoutSession: true,
        authorize: () =>
          approve ? { subject: 'legacy-user' } : new Response('legacy login page', { status: 200 }),
      },
    });
    try {
      legacy.users.set('legacy-user', { subject: 'legacy-user' });
      const legacyClient = await register(legacy);
      const pair = pkce();
      const url = authorizeUrl(legacy, legacyClient, pair.challenge);
      const page = await fetch(url, { redirect: 'manual' });
      expect(await page.text()).toBe('legacy login page');
      approve = true;
      const answer = await fetch(url, { redirect: 'manual' });
      expect(answer.status).toBe(302);
      const code = new URL(answer.headers.get('location')!).searchParams.get('code')!;
      const tokens = await exchange(legacy, { code, client: legacyClient, pkce: pair });
      expect(tokens.scope).toBe('read write');
      // A subject whose principal does not resolve gets no code.
      legacy.users.delete('legacy-user');
      const orphan = await fetch(url, { redirect: 'manual' });
      expect(orphan.status).toBe(403);
      expect(orphan.headers.get('location')).toBeNull();
      legacy.users.set('legacy-user', { subject: 'legacy-user' });
      // Pre-redirect validation still applies to legacy adapters.
      const bad = await fetch(
        authorizeUrl(legacy, legacyClient, pair.challenge, { redirect_uri: 'https://x.example/cb' }),
        {
          redirect: 'manual',
        },
      );
      expect(bad.status).toBe(400);
    } finally {
      await legacy.close();
    }
  });
});
