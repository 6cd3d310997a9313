import { type Context, Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { html, htmlPageHeaders, leavingPage, type SafeHtml } from '../../http/html.js';
import { safeReturnTo } from '../../http/return-to.js';
import { safeEqual } from '../../identity/keys.js';
import { expiredSessionCookie } from '../../identity/session-cookie.js';
import { SESSION_COOKIE } from '../../identity/sessions.js';
import { csrfTokenFor } from '../cli/bootstrap.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { readPageForm } from '../internal/page-form.js';
import {
  optionalUser,
  requireSession,
  type SessionCaller,
  switchedWorkspaceRefusal,
} from '../internal/session.js';
import { apiErrorMessage, DashboardApi, type PlatformFetch } from './api.js';
import { assetRoutes, assetVersion } from './assets.js';
import { DASHBOARD_POLICY, type NoticeLink, shell } from './layout.js';
import { liveRoutes } from './live.js';
import type { ActionResult, DashboardPage, FormOptions, PageView } from './page.js';

export interface DashboardOptions {
  /** The platform's own handler: pages read and act through its API. */
  fetchPlatform: PlatformFetch;
  /** The development IdP's sign-in page runs here. */
  devSignIn: boolean;
  /** Where the configured identity provider signs a browser in (`return_to` is appended). */
  signInUrl?: string;
  pages: readonly DashboardPage[];
  /** How often the live stream looks for a changed balance or connection (default 2 s). */
  livePollMs?: number;
  /** Aborted when the platform stops: live streams end so a shutdown does not wait on them. */
  stopping: AbortSignal;
}

/** The statuses a page answers with: a refusal the API gave keeps its status, others read as 400. */
const REFUSAL_STATUSES = [400, 401, 402, 403, 404, 409, 413, 429] as const;
type PageStatus = 200 | (typeof REFUSAL_STATUSES)[number];

/** A form post is a few short fields. */
const MAX_FORM_BYTES = 16 * 1024;
const headers = htmlPageHeaders(DASHBOARD_POLICY);

/** The forms' CSRF token: bound to the session, and to the dashboard's forms only. */
const dashboardCsrf = (sessionCookie: string) => csrfTokenFor(sessionCookie, 'service-dashboard');

/**
 * The tenant dashboard: server-rendered pages at `/`, each reading and acting through the
 * platform's JSON API as its signed-in user, with a small script for charts and live updates.
 * Every form carries the session's CSRF token and the workspace it was rendered for: it is
 * refused from another origin, and once the user has switched to another workspace.
 *
 * @see docs/dashboard.md
 */
export function dashboardRoutes(ctx: PlatformContext, options: DashboardOptions): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const base = new URL(ctx.baseUrl).pathname.replace(/\/+$/, '');
  app.route('/', assetRoutes());
  app.route('/', liveRoutes(ctx, { pollMs: options.livePollMs ?? 2000, stopping: options.stopping }));

  const answer = (c: Context, status: PageStatus, body: SafeHtml) => c.body(body.value, status, headers);

  const sameOrigin = (target: string) => new URL(target, ctx.baseUrl).origin === new URL(ctx.baseUrl).origin;

  const signInHref = (returnTo: string) => {
    const query = new URLSearchParams({ return_to: returnTo });
    if (options.devSignIn) return `${base}/auth/v1/sign-in?${query}`;
    if (options.signInUrl)
      return `${options.signInUrl}${options.signInUrl.includes('?') ? '&' : '?'}${query}`;
    return null;
  };

  /** The signed-in user, or null (a 401 from the session check; anything else is an error). */
  const signedIn = async (c: Context<PlatformEnv>): Promise<SessionCaller | null> => {
    try {
      return await requireSession(ctx, c);
    } catch (error) {
      if (error instanceof PlatformError && error.status === 401) return null;
      throw error;
    }
  };

  const viewFor = (c: Context<PlatformEnv>, user: SessionCaller | null, path: string): PageView => {
    const cookie = getCookie(c, SESSION_COOKIE);
    const csrf = cookie ? dashboardCsrf(cookie) : '';
    return {
      c,
      ctx,
      user,
      api: new DashboardApi(options.fetchPlatform, c, ctx.baseUrl),
      base,
      params: c.req.param() as Record<string, string>,
      form: (action: string, inner: SafeHtml, o: FormOptions = {}) =>
        html`<form method="post" action="${base}${path}"${o.confirm ? html` data-confirm="${o.confirm}"` : null}${o.label ? html` aria-label="${o.label}"` : null}><input type="hidden" name="_csrf" value="${csrf}">${user ? html`<input type="hidden" name="_workspace" value="${user.tenantId}">` : null}<input type="hidden" name="_action" value="${action}">${inner}${o.submit ? html`<button type="submit"${o.buttonClass ? html` class="${o.buttonClass}"` : null}>${o.submit}</button>` : null}</form>`,
    };
  };

  const render = async (
    c: Context<PlatformEnv>,
    page: DashboardPage,
    user: SessionCaller | null,
    notice: { kind: 'done' | 'error'; text: string; next?: NoticeLink } | null,
    status: PageStatus = 200,
    shown: SafeHtml | null = null,
    posted?: Record<string, string>,
  ) => {
    const view = { ...viewFor(c, user, c.req.path.slice(base.length) || '/'), posted };
    const body = await page.render(view);
    const shellUser = user
      ? {
          email: user.email,
          workspace: (await ctx.accounts.workspaceName(user.tenantId)) ?? user.tenantId,
          role: user.role,
        }
      : null;
    const cookie = getCookie(c, SESSION_COOKIE);
    const common = {
      base,
      nav: page.nav,
      user: shellUser,
      csrf: cookie ? dashboardCsrf(cookie) : null,
      assetVersion: assetVersion(),
    };
    if ('status' in body) {
      return answer(
        c,
        body.status,
        shell({
          ...common,
          title: body.status === 404 ? 'Not found' : 'Not allowed',
          notice: { kind: 'error', text: body.message },
          body: html``,
        }),
      );
    }
    const withShown = shown
      ? html`<section class="shown" aria-label="Shown once">${shown}</section>${body}`
      : body;
    return answer(c, status, shell({ ...common, title: await page.title(view), notice, body: withShown }));
  };

  /** To sign in, and back to the page asked for, its query included (a range, a purchase). */
  const toSignIn = (c: Context<PlatformEnv>) => {
    const { pathname, search } = new URL(c.req.url);
    return c.redirect(`${base}/sign-in?${new URLSearchParams({ return_to: `${pathname}${search}` })}`, 303);
  };

  for (const page of options.pages) {
    app.get(page.path, async (c) => {
      c.set('errorShape', 'flat');
      const user = await signedIn(c);
      if (!user && !page.public) return toSignIn(c);
      const doneKey = c.req.query('done');
      const done = doneKey ? page.actions?.[doneKey]?.done : undefined;
      return render(c, page, user, done ? { kind: 'done', text: done } : null);
    });
    if (!page.actions) continue;
    app.post(page.path, async (c) => {
      c.set('errorShape', 'flat');
      const user = await signedIn(c);
      if (!user) return toSignIn(c);
      const form = await readPageForm(ctx, c, MAX_FORM_BYTES);
      if (!form.ok) return render(c, page, user, { kind: 'error', text: form.message }, form.status);
      const fields: Record<string, string> = {};
      for (const [name, value] of Object.entries(form.fields))
        if (typeof value === 'string') fields[name] = value;
      const cookie = getCookie(c, SESSION_COOKIE) ?? '';
      if (!fields._csrf || !safeEqual(fields._csrf, dashboardCsrf(cookie))) {
        return render(
          c,
          page,
          user,
          { kind: 'error', text: 'This form has expired. Reload the page and try again.' },
          403,
        );
      }
      // A form acts on the workspace its page showed, or not at all. One without the field (not
      // rendered by this dashboard) acts as the API would, on the current workspace.
      const switched = await switchedWorkspaceRefusal(ctx, user, fields._workspace ?? user.tenantId);
      if (switched) return render(c, page, user, { kind: 'error', text: switched }, 409);
      const name = fields._action ?? '';
      const action = Object.hasOwn(page.actions!, name) ? page.actions![name] : undefined;
      if (!action) return render(c, page, user, { kind: 'error', text: 'Unknown action.' }, 400);
      const result: ActionResult = await action.run(
        viewFor(c, user, c.req.path.slice(base.length) || '/'),
        fields,
      );
      if ('redirect' in result) {
        if (sameOrigin(result.redirect)) return c.redirect(result.redirect, 303);
        return c.body(leavingPage(result.redirect), 200, htmlPageHeaders());
      }
      if ('show' in result) return render(c, page, user, null, 200, result.show);
      if ('done' in result) return c.redirect(`${c.req.path}?${new URLSearchParams({ done: name })}`, 303);
      const text = typeof result.refused === 'string' ? result.refused : apiErrorMessage(result.refused);
      const status = REFUSAL_STATUSES.find((known) => known === result.status) ?? 400;
      // The page again with what was typed, so a refusal costs no retyping.
      const next = result.next;
      return render(c, page, user, { kind: 'error', text, ...(next ? { next } : {}) }, status, null, fields);
    });
  }

  app.get('/sign-in', async (c) => {
    c.set('errorShape', 'flat');
    const returnTo = dashboardReturnTo(c.req.query('return_to'), base);
    if (await signedIn(c)) return c.redirect(returnTo, 303);
    const href = signInHref(returnTo);
    // Signed in, but removed from (or left) their last workspace: the workspace pages answer them
    // as signed out, so this page says why, and that signing in again starts a workspace.
    const account = await optionalUser(ctx, c);
    const body = account
      ? html`<p id="no-workspace">You are signed in as ${account.email ?? 'yourself'}, but you are not in any workspace now: you left it, or were removed. Ask an owner to invite you again, or sign in again to start a workspace of your own.</p>${href ? html`<p><a class="button" href="${href}">Sign in again</a></p>` : null}`
      : href
        ? html`<p>Sign in to manage your workspace's credit, integrations, tools and keys.</p><p><a class="button" href="${href}">Sign in</a></p>`
        : html`<p>Sign in through your organisation's identity provider, then open this page again.</p>`;
    return answer(
      c,
      200,
      shell({
        title: 'Sign in',
        base,
        nav: null,
        user: null,
        csrf: null,
        assetVersion: assetVersion(),
        signInLink: false,
        body,
      }),
    );
  });

  app.post('/sign-out', async (c) => {
    c.set('errorShape', 'flat');
    const form = await readPageForm(ctx, c, MAX_FORM_BYTES);
    const cookie = getCookie(c, SESSION_COOKIE);
    const token = form.ok ? form.fields._csrf : undefined;
    if (!form.ok || !cookie || typeof token !== 'string' || !safeEqual(token, dashboardCsrf(cookie))) {
      return c.redirect(`${base}/`, 303);
    }
    await ctx.sessions.destroy(cookie);
    const expired = expiredSessionCookie(ctx.secureCookies);
    setCookie(c, expired.name, expired.value, expired.options);
    return c.redirect(`${base}/sign-in`, 303);
  });

  return app;
}

/** A same-origin path under the base path, or the dashboard's home. */
function dashboardReturnTo(value: string | undefined, base: string): string {
  const path = safeReturnTo(value);
  return path === `${base}/` || path.startsWith(base ? `${base}/` : '/') ? path : `${base}/`;
}

/** What a refused page request is answered with: its status, a title and a sentence a person reads. */
export interface PageRefusal {
  status: 400 | 404 | 405;
  title: string;
  text: string;
  /** The methods the address does take, sent as `Allow` with a 405. */
  allow?: readonly string[];
}

/**
 * The answer to a browser whose page request is refused before any page runs (`/keys/`,
 * `/Billing`, a form posted to a page that has none, `/billing?cursor=%00`): a page with the
 * navigation and the reason, so a person finds their way; API clients keep the JSON answer.
 */
export function dashboardRefusalPage(
  ctx: PlatformContext,
): (c: Context<PlatformEnv>, refusal: PageRefusal) => Promise<Response> {
  const base = new URL(ctx.baseUrl).pathname.replace(/\/+$/, '');
  return async (c, refusal) => {
    let user: SessionCaller | null = null;
    try {
      user = await requireSession(ctx, c);
    } catch (error) {
      if (!(error instanceof PlatformError && error.status === 401)) throw error;
    }
    const cookie = getCookie(c, SESSION_COOKIE);
    const page = shell({
      title: refusal.title,
      base,
      nav: null,
      user: user
        ? {
            email: user.email,
            workspace: (await ctx.accounts.workspaceName(user.tenantId)) ?? user.tenantId,
            role: user.role,
          }
        : null,
      csrf: cookie ? dashboardCsrf(cookie) : null,
      assetVersion: assetVersion(),
      notice: { kind: 'error', text: refusal.text },
      body: html`<p><a href="${base}/">Go to the dashboard's home</a></p>`,
    });
    const answer: Record<string, string> = { ...headers };
    if (refusal.allow) answer.allow = refusal.allow.join(', ');
    return c.body(page.value, refusal.status, answer);
  };
}
