import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTPayload, jwtVerify } from 'jose';
import { textProblem } from '../http/input-guard.js';
import type { IdentityClaims } from './accounts.js';

/**
 * Identity-JWT verification against the identity provider's JWKS.
 *
 * ES256 and RS256 only (so `none` and every HS* token are refused), `exp` required and
 * enforced, `iss` and `aud` checked when given (the platform always gives them: see
 * `identityTokenChecks`), the key set cached for ten minutes and fetched again once when a token
 * names a `kid` the cached set lacks (the IdP rotated its keys).
 */
export const IDENTITY_JWT_ALGORITHMS = ['ES256', 'RS256'] as const;
export const JWKS_CACHE_MS = 10 * 60 * 1000;
/** A burst of tokens with unknown `kid`s triggers at most one refetch per this interval. */
const UNKNOWN_KID_REFETCH_COOLDOWN_MS = 10_000;

/** Where a key set comes from: an HTTP JWKS URL, or a function (the built-in development IdP). */
export type JwksSource = string | (() => Promise<JSONWebKeySet>);

export interface IdentityVerifierOptions {
  jwks: JwksSource;
  /** When set, `iss` must equal it. */
  issuer?: string;
  /** When set, `aud` must contain it. */
  audience?: string;
  fetch?: typeof fetch;
  now?: () => number;
}

export interface IdentityVerifier {
  /** The identity in a valid token, or null for any token that fails verification. */
  verify(token: string): Promise<IdentityClaims | null>;
}

export function createIdentityVerifier(options: IdentityVerifierOptions): IdentityVerifier {
  const now = options.now ?? Date.now;
  const load =
    typeof options.jwks === 'function' ? options.jwks : remoteJwks(options.jwks, options.fetch ?? fetch);
  let cached: { keys: ReturnType<typeof createLocalJWKSet>; fetchedAt: number } | undefined;
  let inflight: Promise<NonNullable<typeof cached>> | undefined;
  let lastUnknownKidRefetch = Number.NEGATIVE_INFINITY;

  const refresh = () => {
    inflight ??= load()
      .then((set) => {
        cached = { keys: createLocalJWKSet(set), fetchedAt: now() };
        return cached;
      })
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  };
  const current = async () => (cached && now() - cached.fetchedAt < JWKS_CACHE_MS ? cached : refresh());

  const verifyWith = async (keys: NonNullable<typeof cached>['keys'], token: string) =>
    jwtVerify(token, keys, {
      algorithms: [...IDENTITY_JWT_ALGORITHMS],
      requiredClaims: ['exp', 'sub'],
      currentDate: new Date(now()),
      ...(options.issuer ? { issuer: options.issuer } : {}),
      ...(options.audience ? { audience: options.audience } : {}),
    });

  return {
    async verify(token) {
      try {
        let result: Awaited<ReturnType<typeof verifyWith>>;
        try {
          result = await verifyWith((await current()).keys, token);
        } catch (error) {
          const cooledDown = now() - lastUnknownKidRefetch >= UNKNOWN_KID_REFETCH_COOLDOWN_MS;
          if (!(error instanceof errors.JWKSNoMatchingKey) || !cooledDown) throw error;
          lastUnknownKidRefetch = now();
          result = await verifyWith((await refresh()).keys, token);
        }
        return claimsOf(result.payload);
      } catch {
        // Expired, badly signed, wrong algorithm, unknown key, IdP unreachable: all one answer.
        return null;
      }
    },
  };
}

/**
 * The identity a verified payload names. A `sub` or `email` that is not clean text (a NUL, a lone
 * surrogate: the input guard's rule) makes the token invalid, as these name the account; such a
 * `name`, only shown, is ignored.
 */
function claimsOf(payload: JWTPayload): IdentityClaims | null {
  if (typeof payload.sub !== 'string' || payload.sub.length === 0 || textProblem(payload.sub)) return null;
  const email = typeof payload.email === 'string' ? payload.email : null;
  if (email !== null && textProblem(email)) return null;
  const metadata = payload.user_metadata as { full_name?: unknown; name?: unknown } | undefined;
  const name = typeof payload.name === 'string' ? payload.name : (metadata?.full_name ?? metadata?.name);
  const cleanName = typeof name === 'string' && textProblem(name) === null ? name : null;
  return { subject: payload.sub, email, name: cleanName };
}

function remoteJwks(url: string, fetchImpl: typeof fetch): () => Promise<JSONWebKeySet> {
  return async () => {
    const response = await fetchImpl(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(5000),
    });
    if (!response.ok) throw new Error(`JWKS fetch failed with ${response.status}`);
    const body = (await response.json()) as JSONWebKeySet;
    if (!Array.isArray(body?.keys)) throw new Error('JWKS response has no keys array');
    return body;
  };
}

/** The audience identity tokens carry unless configured otherwise (`SERVICE_IDP_AUDIENCE`). */
export const DEFAULT_IDENTITY_AUDIENCE = 'authenticated';

/**
 * The `iss` and `aud` an identity token must carry: the configured ones, else the IdP's own
 * issuer `{idpUrl}/auth/v1` and the audience `authenticated` (what the hosted IdP and the
 * development IdP both sign).
 */
export function identityTokenChecks(
  idpUrl: string,
  configured: { issuer?: string; audience?: string } = {},
): { issuer: string; audience: string } {
  return {
    issuer: configured.issuer ?? `${idpUrl.replace(/\/+$/, '')}/auth/v1`,
    audience: configured.audience ?? DEFAULT_IDENTITY_AUDIENCE,
  };
}

/** The JWKS URL of an identity provider base URL. */
export function jwksUrlOf(idpUrl: string): string {
  return `${idpUrl.replace(/\/+$/, '')}/auth/v1/.well-known/jwks.json`;
}
