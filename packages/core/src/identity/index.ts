export { type Account, Accounts, canWrite, ensureAccount, type IdentityClaims } from './accounts.js';
export { bearerToken, looksLikeJwt } from './bearer.js';
export { CliKeys, type IssueCliKeyInput, type IssuedCliKey, issueCliKey, type KeyOwner } from './cli-keys.js';
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
export {
  type CookieWrite,
  cookieWriteRefusal,
  expiredSessionCookie,
  isCrossOrigin,
  type SessionCookie,
  type SessionDeps,
  type StartedSession,
  secureCookiesFor,
  sessionCookie,
  startSession,
} from './session-cookie.js';
export { SESSION_COOKIE, SESSION_TTL_MS, SessionStore, type SessionUser } from './sessions.js';
