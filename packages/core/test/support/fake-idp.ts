import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

export interface FakeIdp {
  /** Base URL; the JWKS is at `{url}/auth/v1/.well-known/jwks.json`. */
  url: string;
  /** How many times the JWKS was fetched. */
  jwksFetches(): number;
  /**
   * A token signed by one of the published keys. Like the hosted IdP, it carries
   * `iss: {url}/auth/v1` and `aud: authenticated` unless `claims` names its own (`null` leaves one out).
   */
  sign(
    claims: Record<string, unknown>,
    options?: { alg?: 'ES256' | 'RS256'; expiresIn?: string | number },
  ): Promise<string>;
  /** A token signed by a key the JWKS does not publish. */
  signWithUnknownKey(claims: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/**
 * A stand-in for the hosted identity provider: real key pairs, a real JWKS over HTTP on
 * loopback. Only the edge we cannot reach is faked.
 */
export async function startFakeIdp(): Promise<FakeIdp> {
  const es = await generateKeyPair('ES256');
  const rs = await generateKeyPair('RS256');
  const stranger = await generateKeyPair('ES256');
  const jwks = {
    keys: [
      { ...(await exportJWK(es.publicKey)), kid: 'es-1', alg: 'ES256', use: 'sig' },
      { ...(await exportJWK(rs.publicKey)), kid: 'rs-1', alg: 'RS256', use: 'sig' },
    ] as JWK[],
  };
  let fetches = 0;
  const server: Server = createServer((req, res) => {
    if (req.url === '/auth/v1/.well-known/jwks.json') {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const hostedClaims = (claims: Record<string, unknown>) =>
    Object.fromEntries(
      Object.entries({ iss: `${url}/auth/v1`, aud: 'authenticated', ...claims }).filter(
        ([, v]) => v !== null,
      ),
    );
  const signWith = (
    key: CryptoKey,
    alg: string,
    kid: string,
    claims: Record<string, unknown>,
    expiresIn: string | number = '1h',
  ) =>
    new SignJWT(claims).setProtectedHeader({ alg, kid }).setIssuedAt().setExpirationTime(expiresIn).sign(key);

  return {
    url,
    jwksFetches: () => fetches,
    sign: (claims, options = {}) => {
      const alg = options.alg ?? 'ES256';
      return signWith(
        alg === 'ES256' ? es.privateKey : rs.privateKey,
        alg,
        alg === 'ES256' ? 'es-1' : 'rs-1',
        hostedClaims(claims),
        options.expiresIn,
      );
    },
    signWithUnknownKey: (claims) =>
      signWith(stranger.privateKey, 'ES256', 'stranger-1', hostedClaims(claims)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
