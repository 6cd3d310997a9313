export { type Account, ensureAccount, type IdentityClaims } from './accounts.js';
export { bearerToken, looksLikeJwt } from './bearer.js';
export {
  createIdentityVerifier,
  IDENTITY_JWT_ALGORITHMS,
  type IdentityVerifier,
  type IdentityVerifierOptions,
  JWKS_CACHE_MS,
  type JwksSource,
  jwksUrlOf,
} from './jwt.js';
export {
  type IssuedKey,
  type IssueKeyInput,
  type KeyPrincipal,
  KeyStore,
  type KeyStoreOptions,
} from './key-store.js';
export {
  DISPLAY_PREFIX_LENGTH,
  displayPrefix,
  hashSecret,
  isWellFormedKey,
  KEY_PREFIX,
  mintKey,
  safeEqual,
} from './keys.js';
export { SESSION_COOKIE, SESSION_TTL_MS, SessionStore, type SessionUser } from './sessions.js';
