import { createHmac, randomBytes } from 'node:crypto';
import { type Context, Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { safeEqual } from '../../identity/keys.js';
import { SESSION_COOKIE, type SessionUser } from '../../identity/sessions.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { readPageForm } from '../internal/page-form.js';
import { consentPage, deliveryPage, messagePage, pageHeaders } from './bootstrap-page.js';
import { parseLoopbackCallback } from './loopback-callback.js';
import type { CliRoutesOptions } from './options.js';

/** The only mode there is: a personal, tenant-scoped CLI key. */
const MODE = 'personal-key';
/** The consent form is three short fields. */
const MAX_FORM_BYTES = 16 * 1024;

/**
 * `/dev/cli-bootstrap`: where `service login` sends the browser.
 *
 * - `GET ?cb=<loopback>&mode=personal-key`: signed out, it sends the browser to the development
 *   IdP's sign-in (or asks the user to sign in first); signed in, it shows who is signed in and an
 *   "Issue CLI key" button.
 * - `POST` (that form): checks the origin and the CSRF token, mints a fresh CLI key (revoking the
 *   account's previous one) and answers a page that posts `{ apiKey, tenantId, appId, email,
 *   issuedAt }` to the loopback URL.
 *
 * @see docs/cli.md "How login works"
 */
export function bootstrapRoutes(ctx: PlatformContext, options: CliRoutesOptions): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const basePath = new URL(ctx.baseUrl).pathname.replace(/\/+$/, '');
  const page = (c: Context, status: 200 | 400 | 401 | 403 | 413, html: string): Response =>
    c.body(html, status, pageHeaders());
  const badLink = (c: Context, message: string) =>
    page(c, 400, messagePage('This login link is not valid', message));
  const BAD_CALLBACK =
    'The cb parameter must be the loopback address of service login: http://127.0.0.1:<port>/done or http://localhost:<port>/done. Run service login again.';
  const BAD_MODE = `Unsupported mode: only ${MODE} is available.`;

  const signedInUser = async (c: Context): Promise<SessionUser | null> => {
    const user = await ctx.sessions.resolve(getCookie(c, SESSION_COOKIE));
    return user?.tenantId ? user : null;
  };
  /** A CLI key can spend the workspace's credit through the proxy: viewers only read, so none for them. */
  const viewerRefused = async (c: Context, user: SessionUser) =>
    (await ctx.accounts.roleIn(user.tenantId!, user.userId)) === 'viewer'
      ? page(
          c,
          403,
          messagePage(
            'Not allowed',
            'Viewers of a workspace get no CLI key: ask one of its owners to make you a member.',
          ),
        )
      : null;

  app.get('/dev/cli-bootstrap', async (c) => {
    c.set('errorShape', 'flat');
    const callback = parseLoopbackCallback(c.req.query('cb'));
    if (!callback) return badLink(c, BAD_CALLBACK);
    const mode = c.req.query('mode') ?? MODE;
    if (mode !== MODE) return badLink(c, BAD_MODE);
    const user = await signedInUser(c);
    const self = `${basePath}/dev/cli-bootstrap?${new URLSearchParams({ cb: callback.url, mode })}`;
    if (!user) {
      if (options.devSignIn) {
        const signIn = `${basePath}/auth/v1/sign-in?${new URLSearchParams({ return_to: self })}`;
        return c.body(null, 303, { location: signIn, 'cache-control': 'no-store' });
      }
      return page(
        c,
        401,
        messagePage(
          'Sign in first',
          `Sign in to ${ctx.baseUrl} in this browser, then open this link again.`,
          {
            href: self,
            text: 'Try again',
          },
        ),
      );
    }
    const refused = await viewerRefused(c, user);
    if (refused) return refused;
    const workspace = await ctx.accounts.workspaceName(user.tenantId!);
    return page(
      c,
      200,
      consentPage({
        email: user.email ?? user.subject,
        workspace: workspace ?? user.tenantId!,
        callback,
        mode,
        csrfToken: csrfTokenFor(getCookie(c, SESSION_COOKIE)!),
      }),
    );
  });

  app.post('/dev/cli-bootstrap', async (c) => {
    c.set('errorShape', 'flat');
    // A cross-site form must not mint keys for the signed-in user.
    const posted = await readPageForm(ctx, c, MAX_FORM_BYTES);
    if (!posted.ok) return page(c, posted.status, messagePage(posted.title, posted.message));
    const form = posted.fields;
    const callback = parseLoopbackCallback(form.cb);
    if (!callback) return badLink(c, BAD_CALLBACK);
    const mode = typeof form.mode === 'string' ? form.mode : MODE;
    if (mode !== MODE) return badLink(c, BAD_MODE);
    const again = {
      href: `${basePath}/dev/cli-bootstrap?${new URLSearchParams({ cb: callback.url, mode })}`,
      text: 'Start again',
    };
    const user = await signedInUser(c);
    if (!user) {
      return page(
        c,
        401,
        messagePage('Sign in first', 'Your session has ended. Sign in and try again.', again),
      );
    }
    const cookie = getCookie(c, SESSION_COOKIE)!;
    const presented = typeof form.csrf_token === 'string' ? form.csrf_token : '';
    if (!safeEqual(presented, csrfTokenFor(cookie))) {
      return page(
        c,
        403,
        messagePage('Request refused', 'This form did not come from this page, or it has expired.', again),
      );
    }
    const refused = await viewerRefused(c, user);
    if (refused) return refused;
    const issued = await ctx.cliKeys.issue({ userId: user.userId, tenantId: user.tenantId! });
    ctx.logger.info('cli key issued', {
      request_id: c.get('requestId'),
      tenant_id: user.tenantId,
      key_prefix: issued.prefix,
      revoked_keys: issued.revokedKeyIds.length,
    });
    const nonce = randomBytes(16).toString('base64');
    return c.body(
      deliveryPage(
        {
          apiKey: issued.apiKey,
          tenantId: user.tenantId!,
          // A personal key is scoped to the tenant, not to one app.
          appId: null,
          email: user.email,
          issuedAt: new Date().toISOString(),
        },
        callback,
        nonce,
      ),
      200,
      pageHeaders({ nonce, connectTo: callback.origin }),
    );
  });

  return app;
}

/**
 * The CSRF token of a session: an HMAC keyed by the session cookie's value, which only the
 * browser holding that HttpOnly cookie (and this server) can know. Nothing to store, and it
 * changes with every sign-in. `purpose` keeps the tokens of different forms apart.
 */
export function csrfTokenFor(sessionCookie: string, purpose = 'service-cli-bootstrap'): string {
  return createHmac('sha256', sessionCookie).update(purpose).digest('base64url');
}
