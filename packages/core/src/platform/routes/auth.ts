import { type Context, Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Kysely } from 'kysely';
import { flatError } from '../../http/errors.js';
import { ensureAccount, type IdentityClaims } from '../../identity/accounts.js';
import { bearerToken } from '../../identity/bearer.js';
import { SESSION_COOKIE, SESSION_TTL_MS, type SessionStore } from '../../identity/sessions.js';
import type { Database } from '../../store/database.js';
import type { PlatformContext, PlatformEnv } from '../context.js';

/**
 * Browser sign-in: the session check, signing in with an identity JWT, and signing out.
 *
 * The session cookie is the only credential `/api/auth/me` reads; a bearer header there is
 * ignored so a page can never look signed in because some script holds a token.
 *
 * @see platform-spec.md "Session check", "Authentication", "Credentials"
 * @see docs/identity.md
 */
export function authRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const deps: SessionDeps = ctx;

  app.get('/api/auth/me', async (c) => {
    c.set('errorShape', 'flat');
    c.header('cache-control', 'no-store');
    const token = getCookie(c, SESSION_COOKIE);
    if (!token) return c.json(ANONYMOUS);
    let user: Awaited<ReturnType<SessionStore['resolve']>>;
    try {
      user = await ctx.sessions.resolve(token);
    } catch (error) {
      // The spec makes this check always answer 200: a store fault reads as signed out (logged,
      // without the cookie value) rather than as an error page on every dashboard load.
      ctx.logger.error('session check failed', {
        request_id: c.get('requestId'),
        error: error instanceof Error ? error.name : 'unknown',
      });
      return c.json(ANONYMOUS);
    }
    if (!user) {
      // Unknown or expired: drop the stale cookie so the browser stops sending it.
      clearSessionCookie(c, ctx.secureCookies);
      return c.json(ANONYMOUS);
    }
    return c.json({ loggedIn: true, userId: user.subject, email: user.email });
  });

  app.post('/api/auth/session', async (c) => {
    c.set('errorShape', 'flat');
    c.header('cache-control', 'no-store');
    const token = bearerToken(c.req.header('authorization'));
    const claims = token ? await ctx.identity.verify(token) : null;
    if (!claims) return flatError(401, 'Unauthorized', {}, { 'cache-control': 'no-store' });
    const signedIn = await startSession(c, deps, claims);
    return c.json({ loggedIn: true, userId: signedIn.subject, email: signedIn.email });
  });

  const signOut = async (c: Context<PlatformEnv>) => {
    c.set('errorShape', 'flat');
    c.header('cache-control', 'no-store');
    // A cross-site form POST to the sign-out alias must not end the user's session.
    if (isCrossOrigin(c, ctx.baseUrl)) {
      return flatError(403, 'Cross-origin request refused', {}, { 'cache-control': 'no-store' });
    }
    await ctx.sessions.destroy(getCookie(c, SESSION_COOKIE));
    clearSessionCookie(c, ctx.secureCookies);
    return c.json({ loggedIn: false });
  };
  app.delete('/api/auth/session', signOut);
  app.post('/api/auth/sign-out', signOut);

  return app;
}

const ANONYMOUS = { loggedIn: false, userId: null, email: null } as const;

/** What starting a browser session needs; a `PlatformContext` satisfies it. */
export interface SessionDeps {
  db: Kysely<Database>;
  sessions: SessionStore;
  secureCookies: boolean;
}

/** The identity a new session belongs to. */
export interface SignedInIdentity {
  /** The identity provider's subject (what `/api/auth/me` reports as `userId`). */
  subject: string;
  email: string | null;
}

/**
 * Signs a verified identity in: ensures its user and tenant, starts a session and sets the
 * session cookie on the response being built in `c`. A session the browser already presented is
 * ended first, so signing in always yields a fresh cookie value (no session fixation).
 *
 * Shared by `POST /api/auth/session` and the development IdP's sign-in form, so both sign in
 * exactly the same way.
 */
export async function startSession(
  c: Context,
  deps: SessionDeps,
  claims: IdentityClaims,
): Promise<SignedInIdentity> {
  const account = await ensureAccount(deps.db, claims);
  const previous = getCookie(c, SESSION_COOKIE);
  if (previous) await deps.sessions.destroy(previous);
  const session = await deps.sessions.create(account.userId);
  setCookie(c, SESSION_COOKIE, session.token, {
    ...sessionCookieAttributes(deps.secureCookies),
    maxAge: Math.floor(SESSION_TTL_MS / 1000),
  });
  return { subject: claims.subject, email: claims.email ?? null };
}

/** Expires the session cookie (`Max-Age=0`) with the attributes it was set with. */
export function clearSessionCookie(c: Context, secure: boolean): void {
  deleteCookie(c, SESSION_COOKIE, sessionCookieAttributes(secure));
}

function sessionCookieAttributes(secure: boolean) {
  // HttpOnly: scripts never see it. Lax: sent on top-level navigations (links into the
  // dashboard work) but not on cross-site subrequests or form POSTs.
  return { httpOnly: true, sameSite: 'Lax', path: '/', ...(secure ? { secure: true } : {}) } as const;
}

/**
 * Whether session cookies get `Secure`: always, except for a plain-http loopback base URL (local
 * development, where browsers would otherwise drop the cookie).
 */
export function secureCookiesFor(baseUrl: string): boolean {
  return !/^http:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/.test(baseUrl);
}

/**
 * True when the request carries an `Origin` that is neither the platform's own (from its base
 * URL) nor the origin the request was addressed to. Browsers send `Origin` on every POST and
 * DELETE, so a cross-site form or script is refused; clients without one (curl, servers) pass.
 * The request's own origin is accepted too so a developer browsing `127.0.0.1` while the base URL
 * says `localhost` is not locked out; a cross-site page cannot choose the Host a browser sends.
 */
export function isCrossOrigin(c: Context, baseUrl: string): boolean {
  const origin = c.req.header('origin');
  if (origin === undefined) return false;
  return origin !== new URL(baseUrl).origin && origin !== new URL(c.req.url).origin;
}
