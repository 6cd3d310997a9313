/**
 * The built-in consent page: who is asking (`client_name`, attacker-controlled, so escaped),
 * what it may do, where the browser goes next, and approve/deny buttons posting the single-use
 * transaction and its CSRF token back to `/authorize`.
 *
 * @see docs/door.md "Consent"
 */

import { escapeHtml } from '../../http/html.js';
import type { DoorConfig } from '../config.js';
import { layout, pageHeaders } from './html.js';

const SCOPE_TEXT: Record<string, string> = {
  read: 'See your data through the tools that only read',
  write: 'Make changes through the tools that can change or delete things',
};

export interface ConsentView {
  clientName: string;
  /** Who is signed in (email, name or subject), so a user on a shared browser notices. */
  account: string;
  scopes: string[];
  redirectUri: string;
  action: string;
  transaction: string;
  csrfToken: string;
}

export function consentPage(config: DoorConfig, view: ConsentView): Response {
  const redirect = new URL(view.redirectUri);
  const scopes = view.scopes
    .map(
      (scope) => `<li><strong>${escapeHtml(scope)}</strong>: ${escapeHtml(SCOPE_TEXT[scope] ?? scope)}</li>`,
    )
    .join('\n');
  const body = `<h1><span class="client">${escapeHtml(view.clientName)}</span> wants to use ${escapeHtml(config.productName)} as you</h1>
<p>It will be able to:</p>
<ul>
${scopes}
</ul>
<p class="muted">Signed in as <strong>${escapeHtml(view.account)}</strong>. Approving sends you back to <strong>${escapeHtml(redirect.host)}</strong>; only approve apps you trust.</p>
<form method="post" action="${escapeHtml(view.action)}">
<input type="hidden" name="transaction" value="${escapeHtml(view.transaction)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(view.csrfToken)}">
<div class="actions">
<button class="primary" type="submit" name="decision" value="approve">Approve</button>
<button class="secondary" type="submit" name="decision" value="deny">Deny</button>
</div>
</form>`;
  return new Response(
    layout({
      title: `Authorize ${view.clientName}`,
      productName: config.productName,
      theme: config.theme,
      body,
    }),
    { status: 200, headers: pageHeaders([redirect.origin]) },
  );
}

/** A plain page for a consent request that cannot go on (expired, used twice, another user). */
export function consentProblemPage(config: DoorConfig, status: number, message: string): Response {
  const body = `<h1>This request cannot continue</h1>
<p>${escapeHtml(message)}</p>
<p class="muted">Go back to the app that sent you here and connect again.</p>`;
  return new Response(
    layout({ title: 'Authorization failed', productName: config.productName, theme: config.theme, body }),
    { status, headers: pageHeaders(null) },
  );
}
