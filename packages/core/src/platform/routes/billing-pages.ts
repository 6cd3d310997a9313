import { type Context, Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { CREDIT_PACKS_USD, MICROS_PER_USD } from '../../billing/payments/processor.js';
import type { FormFields } from '../../http/body.js';
import { htmlPageHeaders, leavingPage } from '../../http/html.js';
import { safeEqual } from '../../identity/keys.js';
import { SESSION_COOKIE } from '../../identity/sessions.js';
import { csrfTokenFor } from '../cli/bootstrap.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError, refusalOf } from '../errors.js';
import { readPageForm } from '../internal/page-form.js';
import { requireSession, type SessionCaller, switchedWorkspaceRefusal } from '../internal/session.js';
import { confirmPurchasePage, messagePage, pageHeaders, signInAction } from './page-html.js';

/** The billing forms' CSRF token: bound to the session, and to these forms only. */
export const billingCsrfToken = (sessionCookie: string) => csrfTokenFor(sessionCookie, 'service-billing');

/** The billing forms are two short fields. */
const MAX_FORM_BYTES = 4 * 1024;

export interface BillingPagesOptions {
  /** The development IdP's sign-in page runs here (outside production with no outside IdP). */
  devSignIn: boolean;
}

type PageStatus = 200 | 400 | 401 | 403 | 404 | 409 | 413 | 503;

/**
 * The billing pages a browser opens: `/billing` (where `top_up_url` points: the balance and the
 * credit packs for a signed-in owner, a way to sign in for anyone else) and the development
 * processor's confirmation page `/billing/purchases/{id}`. Forms post to this origin with the
 * session's CSRF token; a purchase starts through the configured processor, exactly as
 * `POST /api/billing/purchase` does.
 *
 * @see docs/api/payments.md
 */
export function billingPageRoutes(ctx: PlatformContext, options: BillingPagesOptions): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const basePath = new URL(ctx.baseUrl).pathname.replace(/\/+$/, '');
  const billingPath = `${basePath}/billing`;
  const page = (c: Context, status: PageStatus, html: string) => c.body(html, status, pageHeaders);
  const signIn = (returnTo: string) =>
    signInAction({ basePath, baseUrl: ctx.baseUrl, devSignIn: options.devSignIn }, returnTo);

  /** The signed-in owner, or the page to answer anyone else. */
  const ownerOrPage = async (
    c: Context<PlatformEnv>,
    returnTo: string,
  ): Promise<SessionCaller | Response> => {
    c.set('errorShape', 'flat');
    let user: SessionCaller;
    try {
      user = await requireSession(ctx, c);
    } catch (error) {
      if (!(error instanceof PlatformError) || error.status !== 401) throw error;
      return page(
        c,
        401,
        messagePage('Sign in', 'Sign in as a workspace owner to add credit.', signIn(returnTo)),
      );
    }
    if (user.role === 'owner') return user;
    return page(
      c,
      403,
      messagePage(
        'Owners only',
        'Only owners of this workspace add credit. Sign in as an owner.',
        signIn(returnTo),
      ),
    );
  };

  /** The form's fields once it is same-origin and carries the session's CSRF token; else the refusal page. */
  const checkedForm = async (c: Context<PlatformEnv>, again: string): Promise<FormFields | Response> => {
    const posted = await readPageForm(ctx, c, MAX_FORM_BYTES);
    if (!posted.ok) return page(c, posted.status, messagePage(posted.title, posted.message));
    const form = posted.fields;
    const cookie = getCookie(c, SESSION_COOKIE) ?? '';
    const token = typeof form.csrf_token === 'string' ? form.csrf_token : '';
    if (!safeEqual(token, billingCsrfToken(cookie))) {
      return page(
        c,
        403,
        messagePage('Request refused', 'This form did not come from this page, or it has expired.', {
          href: again,
          text: 'Start again',
        }),
      );
    }
    return form;
  };

  app.post('/billing/purchase', async (c) => {
    const owner = await ownerOrPage(c, billingPath);
    if (owner instanceof Response) return owner;
    const form = await checkedForm(c, billingPath);
    if (form instanceof Response) return form;
    // The packs buy credit for the workspace their page showed, never one switched to since.
    const switched =
      typeof form.workspace === 'string' ? await switchedWorkspaceRefusal(ctx, owner, form.workspace) : null;
    if (switched) {
      return page(
        c,
        409,
        messagePage('Cannot buy credit', switched, { href: billingPath, text: 'Back to billing' }),
      );
    }
    // The page offers the packs only; custom amounts go through `POST /api/billing/purchase`.
    const usd = CREDIT_PACKS_USD.find((pack) => String(pack) === form.pack);
    if (usd === undefined || !ctx.payments) {
      const message = ctx.payments
        ? 'Choose one of the credit packs.'
        : 'No payment processor is configured.';
      return page(
        c,
        400,
        messagePage('Cannot buy credit', message, { href: billingPath, text: 'Back to billing' }),
      );
    }
    let url: string;
    try {
      ({ url } = await ctx.payments.startPurchase({
        tenantId: owner.tenantId,
        amountMicros: usd * MICROS_PER_USD,
        returnUrl: `${ctx.baseUrl}/billing`,
        userId: owner.userId,
      }));
    } catch (error) {
      // A form answers with a page: the processor's refusal (not answering, say) is said on one.
      const refusal = refusalOf(error);
      if (!refusal) throw error;
      const status = refusal.status === 503 ? 503 : 400;
      return page(
        c,
        status,
        messagePage('Cannot buy credit', refusal.message, { href: billingPath, text: 'Back to billing' }),
      );
    }
    // The development processor's page is on this origin; a processor's checkout elsewhere is
    // reached through a page, as the form's CSP allows no redirect off this origin.
    if (new URL(url).origin === new URL(ctx.baseUrl).origin) {
      return c.body(null, 303, { location: url, 'cache-control': 'no-store' });
    }
    return c.body(leavingPage(url), 200, htmlPageHeaders());
  });

  const dev = ctx.devPayments;
  if (!dev) return app;
  // Another workspace's purchase reads as an unknown one.
  const purchaseNotFound = (c: Context) =>
    page(
      c,
      404,
      messagePage('Purchase not found', 'This purchase link is not valid.', {
        href: billingPath,
        text: 'Back to billing',
      }),
    );

  app.get('/billing/purchases/:id', async (c) => {
    const self = `${billingPath}/purchases/${encodeURIComponent(c.req.param('id'))}`;
    const owner = await ownerOrPage(c, self);
    if (owner instanceof Response) return owner;
    const purchase = await dev.purchase(owner.tenantId, c.req.param('id'));
    if (!purchase) return purchaseNotFound(c);
    if (purchase.completedAt) {
      return c.body(null, 303, {
        location: resultUrl(purchase.returnUrl, purchase.id),
        'cache-control': 'no-store',
      });
    }
    return page(
      c,
      200,
      confirmPurchasePage({
        workspace: (await ctx.accounts.workspaceName(owner.tenantId)) ?? owner.tenantId,
        amountMicros: purchase.amountMicros,
        confirmAction: self,
        csrfToken: billingCsrfToken(getCookie(c, SESSION_COOKIE)!),
        cancelHref: billingPath,
      }),
    );
  });

  app.post('/billing/purchases/:id', async (c) => {
    const self = `${billingPath}/purchases/${encodeURIComponent(c.req.param('id'))}`;
    const owner = await ownerOrPage(c, self);
    if (owner instanceof Response) return owner;
    const form = await checkedForm(c, self);
    if (form instanceof Response) return form;
    const confirmed = await dev.confirm(owner.tenantId, c.req.param('id'));
    if (!confirmed) return purchaseNotFound(c);
    if (confirmed.applied) {
      ctx.balances.invalidate(owner.tenantId);
      ctx.logger.info('credit purchased', {
        request_id: c.get('requestId'),
        tenant_id: owner.tenantId,
        processor: dev.name,
        amount_micros: confirmed.purchase.amountMicros,
      });
    }
    return c.body(null, 303, {
      location: resultUrl(confirmed.purchase.returnUrl, confirmed.purchase.id),
      'cache-control': 'no-store',
    });
  });

  return app;
}

/** Where a finished purchase sends the buyer: its return URL, naming the purchase. */
function resultUrl(returnUrl: string, purchaseId: string): string {
  const url = new URL(returnUrl);
  url.searchParams.set('purchase', purchaseId);
  return url.toString();
}
