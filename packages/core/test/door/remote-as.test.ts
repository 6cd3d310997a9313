/**
 * `remoteAs` and hosted-broker modes: JWTs from an external issuer, the listed asymmetric
 * algorithms only, `iss`/`aud`/`exp` checked, JWKS cached and refetched on an unknown `kid`; the
 * local authorization server answers 404; RFC 9728 names the external issuer.
 */
import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDoor } from '../../src/door/index.js';
import { silentLogger } from '../../src/http/logger.js';
import { type FakeIdp, startFakeIdp } from '../support/fake-idp.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import { INITIALIZE_PARAMS, rpc } from './support/oauth-flow.js';

let store: TestStore;
let idp: FakeIdp;
let host: DoorHost;
const AUDIENCE = 'https://notes.example/api/service/mcp';

beforeAll(async () => {
  store = await openTestStore();
  idp = await startFakeIdp();
  host = await startDoorHost(store, {
    mcp: {
      remoteAs: { issuer: idp.url, audience: AUDIENCE, jwksUri: `${idp.url}/auth/v1/.well-known/jwks.json` },
    },
  });
  host.users.set('remote-user', { subject: 'remote-user' });
});
afterAll(async () => {
  await host?.close();
  await idp?.close();
  await store?.dispose();
});

const claims = (extra: Record<string, unknown> = {}) => ({
  iss: idp.url,
  aud: AUDIENCE,
  sub: 'remote-user',
  scope: 'read write',
  client_id: 'broker-client-1',
  ...extra,
});

describe('remoteAs mode', () => {
  it('accepts RS256 and ES256 JWTs from the issuer and calls tools as their subject', async () => {
    for (const alg of ['ES256', 'RS256'] as const) {
      const token = await idp.sign(claims(), { alg });
      const call = await rpc(host, token, 'tools/call', { name: 'list_notes', arguments: {} });
      expect(call.status, alg).toBe(200);
      expect(call.body?.result?.structuredContent).toEqual({ notes: ['first', 'second'], tag: null });
    }
    expect(host.actAsCalls.at(-1)?.grant).toEqual({
      subject: 'remote-user',
      scopes: ['read', 'write'],
      clientId: 'broker-client-1',
    });
  });

  it('reads scopes from scope or scp, and grants nothing when a token names none', async () => {
    const { scope: _scope, ...unscoped } = claims();
    const scp = await idp.sign({ ...unscoped, scp: ['read'] });
    expect(
      (await rpc(host, scp, 'tools/call', { name: 'list_notes', arguments: {} })).body?.result?.isError,
    ).toBeFalsy();
    const write = await rpc(host, scp, 'tools/call', { name: 'create_note', arguments: { text: 'x' } });
    expect(write.status).toBe(403);
    expect(write.headers.get('www-authenticate')).toContain('error="insufficient_scope", ');
    expect(write.headers.get('www-authenticate')).toContain('scope="write"');
    const none = await idp.sign(unscoped);
    const refused = await rpc(host, none, 'tools/call', { name: 'list_notes', arguments: {} });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toContain('scope="read"');
  });

  it("refuses HS256 (even keyed with the issuer's public key) and alg none", async () => {
    const { createPublicKey } = await import('node:crypto');
    const jwks = await (await fetch(`${idp.url}/auth/v1/.well-known/jwks.json`)).json();
    const publicPem = createPublicKey({ key: jwks.keys[0], format: 'jwk' }).export({
      type: 'spki',
      format: 'pem',
    });
    const now = Math.floor(Date.now() / 1000);
    const hs256 = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'HS256', kid: 'es-1' })
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(new TextEncoder().encode(String(publicPem)));
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const none = `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ ...claims(), iat: now, exp: now + 600 })}.`;
    for (const token of [hs256, none]) {
      const response = await rpc(host, token, 'tools/list');
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
    }
  });

  it('refuses a wrong issuer, a wrong audience, an expired token and a token without iat', async () => {
    const tokens = [
      await idp.sign(claims({ iss: 'https://other-issuer.example' })),
      await idp.sign(claims({ aud: 'https://someone-else.example/mcp' })),
      await idp.sign(claims(), { expiresIn: -10 }),
    ];
    const es = await generateKeyPair('ES256');
    tokens.push(
      await new SignJWT(claims())
        .setProtectedHeader({ alg: 'ES256', kid: 'es-1' })
        .setExpirationTime('10m')
        .sign(es.privateKey),
    );
    for (const token of tokens) expect((await rpc(host, token, 'tools/list')).status).toBe(401);
  });

  it('answers 401 for a signed token whose subject or client id the store cannot hold, never a 500', async () => {
    for (const token of [
      await idp.sign(claims({ sub: 'remote\u0000user' })),
      await idp.sign(claims({ client_id: 'broker\ud800client' })),
    ]) {
      const answer = await rpc(host, token, 'initialize', INITIALIZE_PARAMS);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toContain('error="invalid_token"');
    }
  });

  it('caches the JWKS and fetches it again when a token names an unknown kid', async () => {
    const before = idp.jwksFetches();
    await rpc(host, await idp.sign(claims()), 'tools/list');
    expect(idp.jwksFetches()).toBe(before);
    // Refetches are spaced (30 s) so a flood of made-up kids cannot become a flood of fetches.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 31_000);
      const unknown = await idp.signWithUnknownKey({ ...claims(), exp: Math.floor(Date.now() / 1000) + 600 });
      expect((await rpc(host, unknown, 'tools/list')).status).toBe(401);
      expect(idp.jwksFetches()).toBe(before + 1);
      expect((await rpc(host, unknown, 'tools/list')).status).toBe(401);
      expect(idp.jwksFetches()).toBe(before + 1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('answers 404 for the local authorization server and names the external issuer in RFC 9728', async () => {
    for (const [path, method] of [
      ['/api/service/mcp/authorize', 'GET'],
      ['/api/service/mcp/token', 'POST'],
      ['/api/service/mcp/revoke', 'POST'],
      ['/api/service/mcp/register', 'POST'],
      ['/.well-known/oauth-authorization-server/api/service/mcp', 'GET'],
      ['/api/service/mcp/.well-known/oauth-authorization-server', 'GET'],
    ] as const) {
      const response = await fetch(`${host.url}${path}`, {
        method,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(response.status, path).toBe(404);
    }
    // The bare-origin spelling is left to the host: the door has no metadata of its own to give.
    expect(await (await fetch(`${host.url}/.well-known/oauth-authorization-server`)).text()).toBe('host 404');
    const prm = await (
      await fetch(`${host.url}/.well-known/oauth-protected-resource/api/service/mcp`)
    ).json();
    expect(prm.authorization_servers).toEqual([idp.url]);
    expect((await fetch(`${host.url}/api/service/mcp/connect`)).status).toBe(200);
  });
});

describe('hosted-broker selection', () => {
  const base = {
    oauth: { session: () => ({ subject: 'x' }), principal: () => null },
    logger: silentLogger,
  };

  it('selects the broker from SERVICE_MCP_BROKER_URL as the token issuer, with federation on', async () => {
    const door = createDoor({
      ...base,
      mcp: true,
      store,
      env: {
        SERVICE_BASE_URL: 'https://notes.example',
        SERVICE_MCP_BROKER_URL: 'https://broker.example',
        SERVICE_MCP_FEDERATION_SECRET: 's'.repeat(32),
      },
    });
    expect(door.mode).toBe('broker');
    const prm = await (await door.wellKnown(
      new Request('https://notes.example/.well-known/oauth-protected-resource/api/service/mcp'),
    ))!.json();
    expect(prm.authorization_servers).toEqual(['https://broker.example']);
    const asm = await door.wellKnown(
      new Request('https://notes.example/.well-known/oauth-authorization-server/api/service/mcp'),
    );
    expect(asm!.status).toBe(404);
  });

  it('lets an explicit serviceAuth or remoteAs win over the variable', async () => {
    const env = {
      SERVICE_BASE_URL: 'https://notes.example',
      SERVICE_MCP_BROKER_URL: 'https://broker.example',
      SERVICE_MCP_FEDERATION_SECRET: 's'.repeat(32),
    };
    const local = createDoor({ ...base, store, env, mcp: { serviceAuth: { keys: ['k'.repeat(40)] } } });
    expect(local.mode).toBe('local');
    const remote = createDoor({
      ...base,
      store,
      env,
      mcp: { remoteAs: { issuer: 'https://as.example', audience: 'a' } },
    });
    expect(remote.mode).toBe('remote');
  });
});
