/**
 * The rules of the browser session cookie: how it is set and cleared, when it is `Secure`, and
 * which cookie-authenticated changes are refused. The HTTP layer reads the headers and writes
 * the cookie these functions describe.
 *
 * @see docs/identity.md
 */
import type { Account, IdentityClaims } from './accounts.js';
import { SESSION_COOKIE, SESSION_TTL_MS, type SessionStore } from './sessions.js';

/** A `Set-Cookie` to write: name, value and attributes (in the shape of Hono's `setCookie`). */
export interface SessionCookie {
  name: string;
  value: string;
  options: {
    httpOnly: true;
    sameSite: 'Lax';
    path: '/';
    secure?: true;
    maxAge: number;
  };
}

/** The session cookie carrying `token` for the session's lifetime. */
export function sessionCookie(token: string, secure: boolean): SessionCookie {
  return {
    name: SESSION_COOKIE,
    value: token,
    options: attributes(secure, Math.floor(SESSION_TTL_MS / 1000)),
  };
}

/** Expires the session cookie (`Max-Age=0`) with the attributes it was set with. */
export function expiredSessionCookie(secure: boolean): SessionCookie {
  return { name: SESSION_COOKIE, value: '', options: attributes(secure, 0) };
}

function attributes(secure: boolean, maxAge: number): SessionCookie['options'] {
  // HttpOnly: scripts never see it. Lax: sent on top-level navigations (links into the
  // dashboard work) but not on cross-site subrequests or form POSTs.
  return { httpOnly: true, sameSite: 'Lax', path: '/', ...(secure ? { secure: true } : {}), maxAge };
}

/**
 * Whether session cookies get `Secure`: always, except for a plain-http loopback base URL (local
 * development, where browsers would otherwise drop the cookie).
 */
export function secureCookiesFor(baseUrl: string): boolean {
  return !/^http:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/.test(baseUrl);
}

/**
 * True when a request carries an `Origin` that is neither the platform's own (from its base URL)
 * nor the origin the request was addressed to (`requestUrl`). Browsers send `Origin` on every
 * POST and DELETE, so a cross-site form or script is refused; clients without one (curl,
 * servers) pass. The request's own origin is accepted too so a developer browsing `127.0.0.1`
 * while the base URL says `localhost` is not locked out; a cross-site page cannot choose the
 * Host a browser sends.
 */
export function isCrossOrigin(origin: string | undefined, baseUrl: string, requestUrl: string): boolean {
  if (origin === undefined) return false;
  return origin !== new URL(baseUrl).origin && origin !== new URL(requestUrl).origin;
}

/** The headers of a cookie-authenticated change that decide whether it may proceed. */
export interface CookieWrite {
  origin: string | undefined;
  contentType: string | undefined;
  /** The URL the request was addressed to. */
  url: string;
}

/**
 * Why a cookie-authenticated change is refused, or null when it may proceed. A browser sends the
 * cookie along with cross-site requests, so such changes must come from our own origin and carry
 * JSON (a content type no cross-site form can send without a CORS preflight we never allow).
 */
export function cookieWriteRefusal(write: CookieWrite, baseUrl: string): 'cross_origin' | 'not_json' | null {
  if (isCrossOrigin(write.origin, baseUrl, write.url)) return 'cross_origin';
  if (!/^application\/json\b/i.test((write.contentType ?? '').trim())) return 'not_json';
  return null;
}

/** What starting a browser session needs; a `PlatformContext` satisfies it. */
export interface SessionDeps {
  accounts: { ensure(claims: IdentityClaims): Promise<Account> };
  sessions: SessionStore;
  secureCookies: boolean;
}

/** A signed-in identity and the cookie that carries its new session. */
export interface StartedSession {
  /** The identity provider's subject (what `/api/auth/me` reports as `userId`). */
  subject: string;
  email: string | null;
  cookie: SessionCookie;
}

/**
 * Signs a verified identity in: ensures its user and tenant and starts a session. The session
 * the browser already presented (`presentedToken`) is ended first, so signing in always yields a
 * fresh cookie value (no session fixation).
 *
 * Shared by `POST /api/auth/session` and the development IdP's sign-in form, so both sign in
 * exactly the same way.
 */
export async function startSession(
  deps: SessionDeps,
  claims: IdentityClaims,
  presentedToken: string | undefined,
): Promise<StartedSession> {
  const account = await deps.accounts.ensure(claims);
  if (presentedToken) await deps.sessions.destroy(presentedToken);
  const session = await deps.sessions.create(account.userId);
  return {
    subject: claims.subject,
    email: claims.email ?? null,
    cookie: sessionCookie(session.token, deps.secureCookies),
  };
}
