import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSecondHandle, openTestStore, STORE_KINDS, type TestStore } from '../../test/support/stores.js';
import { createDevIdentityProvider, DEV_TOKEN_TTL_SECONDS, subjectForEmail } from './dev-idp.js';
import { createIdentityVerifier } from './jwt.js';

const BASE_URL = 'http://localhost:8787';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

for (const kind of STORE_KINDS) {
  describe(`development identity provider (${kind})`, () => {
    let store: TestStore;
    beforeAll(async () => {
      store = await openTestStore(kind);
    });
    afterAll(async () => store?.dispose());

    it('creates one ES256 key on first use and shares it with every provider on the store', async () => {
      const [a, b, c] = await Promise.all([
        createDevIdentityProvider(store.db, { baseUrl: BASE_URL }),
        createDevIdentityProvider(store.db, { baseUrl: BASE_URL }),
        createDevIdentityProvider(store.db, { baseUrl: BASE_URL }),
      ]);
      expect(await store.db.selectFrom('dev_idp_keys').select('kid').execute()).toHaveLength(1);
      const jwks = await a.jwks();
      expect(await b.jwks()).toEqual(jwks);
      expect(await c.jwks()).toEqual(jwks);
      // A restart (a provider made later) signs with the same key too.
      const later = await createDevIdentityProvider(store.db, { baseUrl: BASE_URL });
      expect(await later.jwks()).toEqual(jwks);
      const verifier = createIdentityVerifier({ jwks: () => later.jwks() });
      const { token } = await a.issueToken({ email: 'shared@example.test' });
      expect((await verifier.verify(token))?.email).toBe('shared@example.test');
    });

    it('publishes only the public half of the key, with its kid', async () => {
      const idp = await createDevIdentityProvider(store.db, { baseUrl: BASE_URL });
      const { keys } = await idp.jwks();
      expect(keys).toHaveLength(1);
      const [key] = keys;
      expect(key).toMatchObject({
        kty: 'EC',
        crv: 'P-256',
        alg: 'ES256',
        use: 'sig',
        kid: expect.any(String),
      });
      expect(key).not.toHaveProperty('d');
      const stored = await store.db.selectFrom('dev_idp_keys').selectAll().executeTakeFirstOrThrow();
      expect(stored.private_jwk).toMatchObject({ kid: key?.kid, d: expect.any(String) });
      expect(stored.public_jwk).toMatchObject({ kid: key?.kid });
      const { token } = await idp.issueToken({ email: 'kid@example.test' });
      expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'ES256', kid: key?.kid });
    });

    it('gives the same email the same UUID subject, whatever its case', async () => {
      const idp = await createDevIdentityProvider(store.db, { baseUrl: BASE_URL });
      const first = await idp.issueToken({ email: 'Ada@Example.test' });
      const second = await idp.issueToken({ email: ' ada@example.TEST ' });
      const other = await idp.issueToken({ email: 'grace@example.test' });
      expect(first.subject).toMatch(UUID);
      expect(second.subject).toBe(first.subject);
      expect(other.subject).not.toBe(first.subject);
      expect(first.subject).toBe(subjectForEmail('ada@example.test'));
      expect(decodeJwt(first.token).email).toBe('ada@example.test');
    });

    it('signs tokens that verify against its key set, with its issuer and audience', async () => {
      const idp = await createDevIdentityProvider(store.db, { baseUrl: `${BASE_URL}/` });
      expect(idp.issuer).toBe(`${BASE_URL}/auth/v1`);
      const verifier = createIdentityVerifier({
        jwks: () => idp.jwks(),
        issuer: idp.issuer,
        audience: 'authenticated',
      });
      const issued = await idp.issueToken({ email: 'ada@example.test', name: 'Ada Lovelace' });
      expect(await verifier.verify(issued.token)).toEqual({
        subject: issued.subject,
        email: 'ada@example.test',
        name: 'Ada Lovelace',
      });
      const other = createIdentityVerifier({
        jwks: () => idp.jwks(),
        issuer: 'https://elsewhere.example/auth/v1',
      });
      expect(await other.verify(issued.token)).toBeNull();
    });

    it('issues tokens that live one hour', async () => {
      let now = Date.UTC(2030, 0, 1);
      const idp = await createDevIdentityProvider(store.db, { baseUrl: BASE_URL, now: () => now });
      const issued = await idp.issueToken({ email: 'clock@example.test' });
      expect(issued.expiresIn).toBe(3600);
      expect(DEV_TOKEN_TTL_SECONDS).toBe(3600);
      const claims = decodeJwt(issued.token);
      expect(claims.iat).toBe(now / 1000);
      expect(claims.exp).toBe(now / 1000 + 3600);
      expect(claims.aud).toBe('authenticated');
      expect(claims).not.toHaveProperty('name');
      const verifier = createIdentityVerifier({ jwks: () => idp.jwks(), now: () => now });
      now += 3599_000;
      expect(await verifier.verify(issued.token)).not.toBeNull();
      now += 2000;
      expect(await verifier.verify(issued.token)).toBeNull();
    });

    if (kind === 'postgres') {
      it('shares its key between two instances with their own connections', async () => {
        const second = await openSecondHandle(store);
        try {
          const here = await createDevIdentityProvider(store.db, { baseUrl: BASE_URL });
          const there = await createDevIdentityProvider(second.db, { baseUrl: BASE_URL });
          expect(await there.jwks()).toEqual(await here.jwks());
        } finally {
          await second.close();
        }
      });
    }
  });
}
