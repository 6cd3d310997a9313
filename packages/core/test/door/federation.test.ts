/**
 * `/federate`: an HS256 request from an external issuer, answered with an HS256 assertion of the
 * signed-in user; a login redirect from the adapter forwarded verbatim; every malformed request a
 * JSON 400 (the endpoint renders no HTML of its own); each `jti` answered once.
 */
import { randomUUID } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import { signIn } from './support/oauth-flow.js';

const SECRET = 'federation-secret-of-at-least-32-characters';
const ISSUER = 'https://broker.example';
let store: TestStore;
let host: DoorHost;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store, {
    mcp: { federation: true },
    env: { SERVICE_MCP_FEDERATION_SECRET: SECRET },
  });
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

const key = new TextEncoder().encode(SECRET);

async function federationRequest(
  claims: Record<string, unknown> = {},
  secret = key,
  alg = 'HS256',
): Promise<string> {
  const { exp, ...rest } = claims;
  return new SignJWT({
    jti: randomUUID(),
    redirect_uri: `${ISSUER}/federation/callback`,
    scopes: ['read'],
    client_name: 'Broker client',
    ...rest,
  })
    .setProtectedHeader({ alg })
    .setIssuer(ISSUER)
    .setAudience(`${host.url}/api/service/mcp`)
    .setExpirationTime((exp as number | undefined) ?? Math.floor(Date.now() / 1000) + 120)
    .sign(secret);
}

const federate = (request: string, cookie?: string) =>
  fetch(`${host.url}/api/service/mcp/federate?request=${encodeURIComponent(request)}`, {
    redirect: 'manual',
    ...(cookie ? { headers: { cookie } } : {}),
  });

describe('federation handshake', () => {
  it('answers 302 to redirect_uri with an HS256 assertion of the signed-in user', async () => {
    const jti = randomUUID();
    const response = await federate(await federationRequest({ jti }), signIn(host, 'fed-user'));
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location')!);
    expect(location.origin + location.pathname).toBe(`${ISSUER}/federation/callback`);
    const { payload, protectedHeader } = await jwtVerify(location.searchParams.get('assertion')!, key, {
      algorithms: ['HS256'],
    });
    expect(protectedHeader.alg).toBe('HS256');
    expect(payload).toMatchObject({ sub: 'fed-user', iss: `${host.url}/api/service/mcp`, aud: ISSUER, jti });
    expect(payload.exp! - payload.iat!).toBe(60);
  });

  it("forwards the adapter's login redirect verbatim, coming back to the same federate URL", async () => {
    const request = await federationRequest();
    const response = await federate(request);
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location')!);
    expect(location.pathname).toBe('/sign-in');
    const returnTo = new URL(location.searchParams.get('return_to')!);
    expect(returnTo.pathname).toBe('/api/service/mcp/federate');
    expect(returnTo.searchParams.get('request')).toBe(request);
    // After signing in, the same request completes: the nonce was not spent by the detour.
    expect((await federate(request, signIn(host, 'fed-user'))).status).toBe(302);
  });

  it('answers a jti once', async () => {
    const request = await federationRequest();
    const cookie = signIn(host, 'fed-user');
    expect((await federate(request, cookie)).status).toBe(302);
    const replay = await federate(request, cookie);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toEqual({
      error: 'invalid_request',
      error_description: 'This federation request was already used',
    });
  });

  it.each([
    ['exp more than 5 minutes ahead', { exp: Math.floor(Date.now() / 1000) + 10 * 60 }],
    ['an expired request', { exp: Math.floor(Date.now() / 1000) - 120 }],
    ['a redirect_uri off the issuer origin', { redirect_uri: 'https://attacker.example/cb' }],
    ['scopes that are not an array', { scopes: 'read' }],
    ['an unknown scope', { scopes: ['admin'] }],
    ['a missing client_name', { client_name: '' }],
    ['a short jti', { jti: 'x' }],
  ])('refuses %s with a JSON 400', async (_, claims) => {
    const response = await federate(await federationRequest(claims), signIn(host, 'fed-user'));
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(response.headers.get('location')).toBeNull();
  });

  it('refuses a redirect_uri without an http(s) origin, even when iss has the same null origin', async () => {
    for (const [issuer, redirect] of [
      ['javascript:void(0)', 'javascript:alert(document.cookie)'],
      ['data:text/plain,broker', 'data:text/html,<script>alert(1)</script>'],
    ]) {
      const request = await new SignJWT({
        jti: randomUUID(),
        redirect_uri: redirect,
        scopes: ['read'],
        client_name: 'Broker client',
      })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer(issuer!)
        .setAudience(`${host.url}/api/service/mcp`)
        .setExpirationTime('2m')
        .sign(key);
      const response = await federate(request, signIn(host, 'fed-user'));
      expect(response.status, redirect).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expect((await response.json()).error_description).toBe('redirect_uri must be an http or https URL');
    }
  });

  it('refuses another secret, another algorithm, another audience and a missing request', async () => {
    const cookie = signIn(host, 'fed-user');
    const wrongSecret = await federationRequest({}, new TextEncoder().encode('x'.repeat(40)));
    const hs512 = await federationRequest({}, key, 'HS512');
    const otherAudience = await new SignJWT({
      jti: randomUUID(),
      redirect_uri: `${ISSUER}/cb`,
      scopes: [],
      client_name: 'x',
    })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(ISSUER)
      .setAudience('https://other-door.example/api/service/mcp')
      .setExpirationTime('2m')
      .sign(key);
    for (const request of [wrongSecret, hs512, otherAudience]) {
      expect((await federate(request, cookie)).status).toBe(400);
    }
    expect((await fetch(`${host.url}/api/service/mcp/federate`)).status).toBe(400);
  });

  it('authenticates through oauth.authorize when the adapter has it', async () => {
    const viaAuthorize = await startDoorHost(store, {
      mcp: { federation: { secret: SECRET } },
      oauth: {
        authorize: (_request, { clientName, consent }) =>
          clientName === 'Broker client' && consent === null
            ? { subject: 'from-authorize' }
            : new Response('no', { status: 403 }),
      },
    });
    try {
      const request = await new SignJWT({
        jti: randomUUID(),
        redirect_uri: `${ISSUER}/cb`,
        scopes: ['read'],
        client_name: 'Broker client',
      })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer(ISSUER)
        .setAudience(`${viaAuthorize.url}/api/service/mcp`)
        .setExpirationTime('2m')
        .sign(key);
      const response = await fetch(`${viaAuthorize.url}/api/service/mcp/federate?request=${request}`, {
        redirect: 'manual',
      });
      const assertion = new URL(response.headers.get('location')!).searchParams.get('assertion')!;
      expect((await jwtVerify(assertion, key)).payload.sub).toBe('from-authorize');
    } finally {
      await viaAuthorize.close();
    }
  });

  it('answers 404 when federation is not configured', async () => {
    const plain = await startDoorHost(store);
    try {
      expect((await fetch(`${plain.url}/api/service/mcp/federate?request=x`)).status).toBe(404);
    } finally {
      await plain.close();
    }
  });
});
