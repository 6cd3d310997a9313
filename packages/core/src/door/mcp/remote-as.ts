/**
 * `remoteAs` mode: bearer tokens are JWTs from an external authorization server. Only the
 * asymmetric algorithms below are accepted (HS* and `none` never); `iss`, `sub`, `aud`, `iat`
 * and `exp` are required, `iss` and `aud` must equal the configured values (an `aud` array must
 * name this audience and nothing else) and `exp` must be in the future. The JWKS is cached in
 * memory (10 minutes) and fetched again when a token names an unknown `kid` (at most once per
 * 30 s).
 */
import { createRemoteJWKSet, customFetch, jwtVerify } from 'jose';
import type { DoorConfig } from '../config.js';
import { isStorableText } from '../oauth/form.js';

export const REMOTE_AS_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
] as const;

const JWKS_CACHE_MS = 10 * 60 * 1000;
const UNKNOWN_KID_COOLDOWN_MS = 30 * 1000;

export interface RemoteCaller {
  subject: string;
  clientId: string;
  scopes: string[];
  expiresAt: Date;
}

export interface RemoteAsVerifier {
  /** The caller a valid token names, or null for any token that fails verification. */
  verify(token: string): Promise<RemoteCaller | null>;
}

export function createRemoteAsVerifier(
  remoteAs: NonNullable<DoorConfig['remoteAs']>,
  options: { fetch: typeof fetch; now: () => number },
): RemoteAsVerifier {
  const jwks = createRemoteJWKSet(new URL(remoteAs.jwksUri), {
    cacheMaxAge: JWKS_CACHE_MS,
    cooldownDuration: UNKNOWN_KID_COOLDOWN_MS,
    timeoutDuration: 5000,
    [customFetch]: (url, init) => options.fetch(url, init),
  });
  return {
    async verify(token) {
      if (token.split('.').length !== 3) return null;
      try {
        const { payload } = await jwtVerify(token, jwks, {
          algorithms: [...REMOTE_AS_ALGORITHMS],
          issuer: remoteAs.issuer,
          audience: remoteAs.audience,
          requiredClaims: ['iss', 'sub', 'aud', 'iat', 'exp'],
          currentDate: new Date(options.now()),
        });
        // A token several audiences accept can be replayed here by any of them: only one meant
        // for this server alone passes (MCP: tokens specifically intended for the server).
        if (Array.isArray(payload.aud) && payload.aud.some((aud) => aud !== remoteAs.audience)) return null;
        // Subject and client id are stored with the session: text the store cannot hold fails here.
        if (typeof payload.sub !== 'string' || payload.sub === '' || !isStorableText(payload.sub))
          return null;
        // `scope` (RFC 8693 §4.2, RFC 9068) or `scp` (a string or an array, as some issuers spell it).
        const scp = payload.scp;
        const scope =
          typeof payload.scope === 'string'
            ? payload.scope
            : Array.isArray(scp)
              ? scp.filter((s): s is string => typeof s === 'string').join(' ')
              : typeof scp === 'string'
                ? scp
                : '';
        const clientId =
          typeof payload.client_id === 'string'
            ? payload.client_id
            : typeof payload.azp === 'string'
              ? payload.azp
              : remoteAs.issuer;
        if (!isStorableText(clientId)) return null;
        return {
          subject: payload.sub,
          clientId,
          scopes: scope.split(' ').filter(Boolean),
          expiresAt: new Date((payload.exp ?? 0) * 1000),
        };
      } catch {
        // Wrong algorithm, bad signature, expired, wrong issuer or audience, JWKS unreachable.
        return null;
      }
    },
  };
}
