import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  base64url,
  exportJWK,
  generateKeyPair,
  type JSONWebKeySet,
  type JWK,
  type JWTPayload,
  SignJWT,
} from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeIdp } from '../../test/support/fake-idp.js';
import { createIdentityVerifier, jwksUrlOf } from './jwt.js';

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

const START = Date.UTC(2030, 0, 1);
const seconds = (ms: number) => Math.floor(ms / 1000);

let es: KeyPair;
let rs: KeyPair;
let rotated: KeyPair;
let stranger: KeyPair;

beforeAll(async () => {
  [es, rs, rotated, stranger] = await Promise.all([
    generateKeyPair('ES256'),
    generateKeyPair('RS256'),
    generateKeyPair('ES256'),
    generateKeyPair('ES256'),
  ]);
});

const publicJwk = async (pair: KeyPair, kid: string, alg: string): Promise<JWK> => ({
  ...(await exportJWK(pair.publicKey)),
  kid,
  alg,
  use: 'sig',
});

/** A JWKS source that counts its fetches and whose keys a test can swap (an IdP rotating). */
function countingSource(initial: JWK[]) {
  const state = { keys: initial, fetches: 0 };
  return {
    state,
    load: async (): Promise<JSONWebKeySet> => {
      state.fetches++;
      return { keys: state.keys };
    },
  };
}

/** A token as of the test clock `at`, valid for an hour unless the claims say otherwise. */
function sign(
  pair: KeyPair,
  header: { alg: string; kid?: string },
  at: number,
  claims: JWTPayload = {},
  { exp = true }: { exp?: boolean } = {},
): Promise<string> {
  const jwt = new SignJWT({ sub: 'user-1', email: 'u@example.test', ...claims })
    .setProtectedHeader(header)
    .setIssuedAt(seconds(at));
  if (exp) jwt.setExpirationTime(seconds(at) + 3600);
  return jwt.sign(pair.privateKey);
}

describe('createIdentityVerifier', () => {
  it('accepts ES256 and RS256 tokens from the key set and returns their identity', async () => {
    const source = countingSource([await publicJwk(es, 'es', 'ES256'), await publicJwk(rs, 'rs', 'RS256')]);
    const verifier = createIdentityVerifier({ jwks: source.load, now: () => START });
    expect(
      await verifier.verify(await sign(es, { alg: 'ES256', kid: 'es' }, START, { name: 'Ada' })),
    ).toEqual({
      subject: 'user-1',
      email: 'u@example.test',
      name: 'Ada',
    });
    expect(await verifier.verify(await sign(rs, { alg: 'RS256', kid: 'rs' }, START))).toEqual({
      subject: 'user-1',
      email: 'u@example.test',
      name: null,
    });
  });

  it('reads the display name from user_metadata when the token has no name claim', async () => {
    const source = countingSource([await publicJwk(es, 'es', 'ES256')]);
    const verifier = createIdentityVerifier({ jwks: source.load, now: () => START });
    const token = await sign(es, { alg: 'ES256', kid: 'es' }, START, {
      user_metadata: { full_name: 'Grace' },
    });
    expect((await verifier.verify(token))?.name).toBe('Grace');
  });

  it('refuses an HS256 token, even one keyed with a published public key', async () => {
    const esJwk = await publicJwk(es, 'es', 'ES256');
    const verifier = createIdentityVerifier({ jwks: countingSource([esJwk]).load, now: () => START });
    // The classic confusion attack: the public key's bytes used as an HMAC secret.
    const secret = new TextEncoder().encode(JSON.stringify(esJwk));
    const token = await new SignJWT({ sub: 'user-1' })
      .setProtectedHeader({ alg: 'HS256', kid: 'es' })
      .setIssuedAt(seconds(START))
      .setExpirationTime(seconds(START) + 3600)
      .sign(secret);
    expect(await verifier.verify(token)).toBeNull();
  });

  it('refuses an unsigned alg:none token', async () => {
    const verifier = createIdentityVerifier({
      jwks: countingSource([await publicJwk(es, 'es', 'ES256')]).load,
      now: () => START,
    });
    const part = (value: object) => base64url.encode(JSON.stringify(value));
    const payload = { sub: 'user-1', iat: seconds(START), exp: seconds(START) + 3600 };
    expect(await verifier.verify(`${part({ alg: 'none', kid: 'es' })}.${part(payload)}.`)).toBeNull();
    expect(await verifier.verify(`${part({ alg: 'none' })}.${part(payload)}.c2ln`)).toBeNull();
  });

  it('refuses an expired token and accepts it while it is still live', async () => {
    let now = START;
    const verifier = createIdentityVerifier({
      jwks: countingSource([await publicJwk(es, 'es', 'ES256')]).load,
      now: () => now,
    });
    const token = await sign(es, { alg: 'ES256', kid: 'es' }, START);
    now = START + 3599_000;
    expect(await verifier.verify(token)).not.toBeNull();
    now = START + 3601_000;
    expect(await verifier.verify(token)).toBeNull();
  });

  it('refuses a token without exp', async () => {
    const verifier = createIdentityVerifier({
      jwks: countingSource([await publicJwk(es, 'es', 'ES256')]).load,
      now: () => START,
    });
    expect(
      await verifier.verify(await sign(es, { alg: 'ES256', kid: 'es' }, START, {}, { exp: false })),
    ).toBeNull();
  });

  it('refuses a token without a subject', async () => {
    const verifier = createIdentityVerifier({
      jwks: countingSource([await publicJwk(es, 'es', 'ES256')]).load,
      now: () => START,
    });
    expect(
      await verifier.verify(await sign(es, { alg: 'ES256', kid: 'es' }, START, { sub: undefined })),
    ).toBeNull();
  });

  it('refuses a token signed by a key the set does not publish, with or without a known kid', async () => {
    const verifier = createIdentityVerifier({
      jwks: countingSource([await publicJwk(es, 'es', 'ES256')]).load,
      now: () => START,
    });
    expect(await verifier.verify(await sign(stranger, { alg: 'ES256', kid: 'stranger' }, START))).toBeNull();
    // Claiming the published kid does not help: the signature must still check out.
    expect(await verifier.verify(await sign(stranger, { alg: 'ES256', kid: 'es' }, START))).toBeNull();
  });

  it('refuses garbage without throwing', async () => {
    const verifier = createIdentityVerifier({
      jwks: countingSource([await publicJwk(es, 'es', 'ES256')]).load,
      now: () => START,
    });
    for (const token of ['', 'a.b.c', 'not a jwt', `${'x'.repeat(10_000)}.y.z`]) {
      expect(await verifier.verify(token)).toBeNull();
    }
  });

  it('checks iss and aud when configured', async () => {
    const source = countingSource([await publicJwk(es, 'es', 'ES256')]);
    const verifier = createIdentityVerifier({
      jwks: source.load,
      issuer: 'https://idp.example/auth/v1',
      audience: 'authenticated',
      now: () => START,
    });
    const header = { alg: 'ES256', kid: 'es' };
    const good = { iss: 'https://idp.example/auth/v1', aud: 'authenticated' };
    expect(await verifier.verify(await sign(es, header, START, good))).not.toBeNull();
    expect(
      await verifier.verify(await sign(es, header, START, { ...good, iss: 'https://evil.example' })),
    ).toBeNull();
    expect(await verifier.verify(await sign(es, header, START, { ...good, aud: 'other' }))).toBeNull();
  });

  it('caches the key set for ten minutes and fetches it again after', async () => {
    let now = START;
    const source = countingSource([await publicJwk(es, 'es', 'ES256')]);
    const verifier = createIdentityVerifier({ jwks: source.load, now: () => now });
    const token = await sign(es, { alg: 'ES256', kid: 'es' }, START);
    for (let i = 0; i < 5; i++) expect(await verifier.verify(token)).not.toBeNull();
    expect(source.state.fetches).toBe(1);
    // The contract's ten minutes, written out: a change of the constant fails here.
    now = START + 10 * 60_000 - 1;
    expect(await verifier.verify(token)).not.toBeNull();
    expect(source.state.fetches).toBe(1);
    now = START + 10 * 60_000;
    expect(await verifier.verify(token)).not.toBeNull();
    expect(source.state.fetches).toBe(2);
    expect(await verifier.verify(token)).not.toBeNull();
    expect(source.state.fetches).toBe(2);
  });

  it('fetches the key set once for a burst of concurrent first verifications', async () => {
    const source = countingSource([await publicJwk(es, 'es', 'ES256')]);
    const verifier = createIdentityVerifier({ jwks: source.load, now: () => START });
    const token = await sign(es, { alg: 'ES256', kid: 'es' }, START);
    const results = await Promise.all(Array.from({ length: 20 }, () => verifier.verify(token)));
    expect(results.every((r) => r?.subject === 'user-1')).toBe(true);
    expect(source.state.fetches).toBe(1);
  });

  it('refetches exactly once on an unknown kid, so a rotated-in key is accepted at once', async () => {
    const source = countingSource([await publicJwk(es, 'es', 'ES256')]);
    const verifier = createIdentityVerifier({ jwks: source.load, now: () => START });
    expect(await verifier.verify(await sign(es, { alg: 'ES256', kid: 'es' }, START))).not.toBeNull();
    expect(source.state.fetches).toBe(1);
    // The IdP rotates: the new key is published, and tokens signed with it arrive well within
    // the ten-minute cache window.
    source.state.keys = [await publicJwk(es, 'es', 'ES256'), await publicJwk(rotated, 'es-2', 'ES256')];
    expect(await verifier.verify(await sign(rotated, { alg: 'ES256', kid: 'es-2' }, START))).not.toBeNull();
    expect(source.state.fetches).toBe(2);
    // The refreshed set is cached like any other.
    expect(await verifier.verify(await sign(rotated, { alg: 'ES256', kid: 'es-2' }, START))).not.toBeNull();
    expect(source.state.fetches).toBe(2);
  });

  it('does not refetch for every token in a flood of unknown kids', async () => {
    let now = START;
    const source = countingSource([await publicJwk(es, 'es', 'ES256')]);
    const verifier = createIdentityVerifier({ jwks: source.load, now: () => now });
    expect(await verifier.verify(await sign(es, { alg: 'ES256', kid: 'es' }, START))).not.toBeNull();
    const flood = await Promise.all(
      Array.from({ length: 50 }, (_, i) => sign(stranger, { alg: 'ES256', kid: `unknown-${i}` }, START)),
    );
    for (const token of flood) expect(await verifier.verify(token)).toBeNull();
    expect(await Promise.all(flood.map((token) => verifier.verify(token)))).toEqual(flood.map(() => null));
    expect(source.state.fetches).toBe(2);
    // Known tokens keep verifying from the cache meanwhile.
    expect(await verifier.verify(await sign(es, { alg: 'ES256', kid: 'es' }, START))).not.toBeNull();
    expect(source.state.fetches).toBe(2);
    // Much later (still within the cache window) an unknown kid may trigger one more refetch.
    now = START + 60_000;
    expect(await verifier.verify(flood[0]!)).toBeNull();
    expect(source.state.fetches).toBe(3);
  });

  it('answers null, not an error, when the key set cannot be loaded', async () => {
    const verifier = createIdentityVerifier({
      jwks: async () => {
        throw new Error('IdP down');
      },
      now: () => START,
    });
    expect(await verifier.verify(await sign(es, { alg: 'ES256', kid: 'es' }, START))).toBeNull();
  });
});

describe('createIdentityVerifier over HTTP', () => {
  let idp: Awaited<ReturnType<typeof startFakeIdp>>;
  beforeAll(async () => {
    idp = await startFakeIdp();
  });
  afterAll(async () => idp?.close());

  it('verifies ES256 and RS256 tokens against a JWKS URL served on 127.0.0.1, fetching it once', async () => {
    const verifier = createIdentityVerifier({ jwks: jwksUrlOf(idp.url) });
    expect(jwksUrlOf(`${idp.url}/`)).toBe(`${idp.url}/auth/v1/.well-known/jwks.json`);
    const es256 = await idp.sign({ sub: 'http-user', email: 'h@example.test' });
    const rs256 = await idp.sign({ sub: 'http-user' }, { alg: 'RS256' });
    expect((await verifier.verify(es256))?.subject).toBe('http-user');
    expect((await verifier.verify(rs256))?.subject).toBe('http-user');
    expect(idp.jwksFetches()).toBe(1);
    expect(await verifier.verify(await idp.signWithUnknownKey({ sub: 'http-user' }))).toBeNull();
  });

  it('answers null when the JWKS URL fails or serves something that is not a key set', async () => {
    const server = createServer((req, res) => {
      if (req.url?.startsWith('/broken'))
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"nope":1}');
      else res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const token = await idp.sign({ sub: 'http-user' });
      expect(await createIdentityVerifier({ jwks: `${base}/broken` }).verify(token)).toBeNull();
      expect(await createIdentityVerifier({ jwks: `${base}/error` }).verify(token)).toBeNull();
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
