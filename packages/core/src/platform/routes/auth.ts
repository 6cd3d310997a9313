import { type Context, Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { flatError } from '../../http/errors.js';
import { bearerToken } from '../../identity/bearer.js';
import {
  expiredSessionCookie,
  isCrossOrigin,
  type SessionCookie,
  startSession,
} from '../../identity/session-cookie.js';
import { SESSION_COOKIE, type SessionStore } from '../../identity/sessions.js';
import type { PlatformContext, PlatformEnv } from '../context.js';

/**
 * Browser sign-in: the session check, signing in with an identity JWT, and signing out.
 *
 * The session cookie is the only credential `/api/auth/me` reads; a bearer header there is
 * ignored so a page can never look signed in because some script holds a token.
 *
 * @see docs/identity.md
 */
export function authRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();

  app.get('/api/auth/me', async (c) => {
    c.set('errorShape', 'flat');
    c.header('cache-control', 'no-store');
    const token = getCookie(c, SESSION_COOKIE);
    if (!token) return c.json(ANONYMOUS);
    let user: Awaited<ReturnType<SessionStore['resolve']>>;
    try {
      user = await ctx.sessions.resolve(token);
    } catch (error) {
      // The API contract makes this check always answer 200: a store fault reads as signed out (logged,
      // without the cookie value) rather than as an error page on every dashboard load.
      ctx.logger.error('session check failed', {
        request_id: c.get('requestId'),
        error: error instanceof Error ? error.name : 'unknown',
      });
      return c.json(ANONYMOUS);
    }
    if (!user) {
      // Unknown or expired: drop the stale cookie so the browser stops sending it.
      writeCookie(c, expiredSessionCookie(ctx.secureCookies));
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
    const signedIn = await startSession(ctx, claims, getCookie(c, SESSION_COOKIE));
    writeCookie(c, signedIn.cookie);
    return c.json({ loggedIn: true, userId: signedIn.subject, email: signedIn.email });
  });

  const signOut = async (c: Context<PlatformEnv>) => {
    c.set('errorShape', 'flat');
    c.header('cache-control', 'no-store');
    // A cross-site form POST to the sign-out alias must not end the user's session.
    if (isCrossOrigin(c.req.header('origin'), ctx.baseUrl, c.req.url)) {
      return flatError(403, 'Cross-origin request refused', {}, { 'cache-control': 'no-store' });
    }
    await ctx.sessions.destroy(getCookie(c, SESSION_COOKIE));
    writeCookie(c, expiredSessionCookie(ctx.secureCookies));
    return c.json({ loggedIn: false });
  };
  app.delete('/api/auth/session', signOut);
  app.post('/api/auth/sign-out', signOut);

  return app;
}

const ANONYMOUS = { loggedIn: false, userId: null, email: null } as const;

function writeCookie(c: Context, cookie: SessionCookie): void {
  setCookie(c, cookie.name, cookie.value, cookie.options);
}
