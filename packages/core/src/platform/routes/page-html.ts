import { formatUsd } from '../../billing/payments/processor.js';
import { escapeHtml, htmlDocument, htmlPageHeaders } from '../../http/html.js';

/**
 * The HTML of the platform's own pages (billing, the development processor's confirmation, an
 * integration's page). Every value written into a page is escaped; the pages load nothing, run
 * no script, and post their forms only to this origin.
 */

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}
button{margin:.25rem .5rem .25rem 0;padding:.5rem 1rem;font-size:1rem}.note{color:#555;font-size:.9rem}
.error{color:#b00020}.done{color:#1b5e20}form{display:inline}`;

export const pageHeaders = htmlPageHeaders({ formTargets: ["'self'"] });

export function pageLayout(title: string, body: string): string {
  return htmlDocument({ title, style: STYLE, body: `<h1>${escapeHtml(title)}</h1>\n${body}` });
}

function link(href: string, text: string): string {
  return `<p><a href="${escapeHtml(href)}">${escapeHtml(text)}</a></p>`;
}

/** Where a signed-out visitor signs in to come back to `returnTo`. */
export function signInAction(
  options: { basePath: string; baseUrl: string; devSignIn: boolean },
  returnTo: string,
): { href: string; text: string } {
  return options.devSignIn
    ? {
        href: `${options.basePath}/auth/v1/sign-in?${new URLSearchParams({ return_to: returnTo })}`,
        text: 'Sign in',
      }
    : { href: returnTo, text: `Sign in to ${options.baseUrl} in this browser, then open this page again` };
}

/** A page that only explains (signed out, not an owner, bad link); `action` is where to go next. */
export function messagePage(title: string, message: string, action?: { href: string; text: string }) {
  return pageLayout(
    title,
    `<p class="error" role="alert">${escapeHtml(message)}</p>\n${action ? link(action.href, action.text) : ''}`,
  );
}

export interface ConfirmView {
  workspace: string;
  amountMicros: number;
  confirmAction: string;
  csrfToken: string;
  /** Where "Cancel" goes: the billing page, nothing bought. */
  cancelHref: string;
}

/** The development processor's checkout: nothing is charged; confirming adds the credit. */
export function confirmPurchasePage(view: ConfirmView): string {
  return pageLayout(
    'Confirm purchase',
    `<p>Add <strong id="amount">${escapeHtml(formatUsd(view.amountMicros))}</strong> of credit to workspace
<strong id="workspace">${escapeHtml(view.workspace)}</strong>.</p>
<p class="note">Development payment processor: no card is charged.</p>
<form method="post" action="${escapeHtml(view.confirmAction)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(view.csrfToken)}">
<button type="submit" id="confirm">Confirm purchase</button>
</form>
<p><a id="cancel" href="${escapeHtml(view.cancelHref)}">Cancel and go back to billing</a> (nothing is bought).</p>`,
  );
}
