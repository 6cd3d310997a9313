/**
 * The built-in consent page: who is asking (`client_name`, attacker-controlled, so escaped),
 * what it may do, where the browser goes next, and approve/deny buttons posting the single-use
 * transaction and its CSRF token back to `/authorize`.
 *
 * @see docs/door.md "Consent"
 */

import { escapeHtml } from '../../http/html.js';
import type { DoorConfig } from '../config.js';
import type { OAuthError } from '../oauth/errors.js';
import { formActionSource, redirectTarget } from '../oauth/redirect-uri.js';
import { layout, pageHeaders } from './html.js';

const SCOPE_TEXT: Record<string, string> = {
  read: 'See your data through the tools that only read',
  write: 'Make changes through the tools that can change or delete things',
};

export interface ConsentView {
  clientName: string;
  /** The host publishing the client's metadata document, when its client id is that document's URL. */
  publishedBy: string | null;
  /** Who is signed in (email, name or subject), so a user on a shared browser notices. */
  account: string;
  scopes: string[];
  redirectUri: string;
  action: string;
  transaction: string;
  csrfToken: string;
}

export function consentPage(config: DoorConfig, view: ConsentView): Response {
  const scopes = view.scopes
    .map(
      (scope) => `<li><strong>${escapeHtml(scope)}</strong>: ${escapeHtml(SCOPE_TEXT[scope] ?? scope)}</li>`,
    )
    .join('\n');
  // The name is isolated (`bdi`): a direction override in it (U+202E) would otherwise reorder the
  // page's own words after it, and the client chooses its name.
  const body = `<h1><bdi class="client">${escapeHtml(view.clientName)}</bdi> wants to use ${escapeHtml(config.productName)} as you</h1>
<p>It will be able to:</p>
<ul>
${scopes}
</ul>
${view.publishedBy === null ? '' : `<p class="muted">Identity published by <strong>${escapeHtml(view.publishedBy)}</strong>.</p>\n`}<p class="muted">Signed in as <strong>${escapeHtml(view.account)}</strong>. ${returnsTo(view.redirectUri)} Only approve apps you trust.</p>
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
    { status: 200, headers: pageHeaders([formActionSource(view.redirectUri)]) },
  );
}

/**
 * Where approving sends the user, host named (MCP 2025-11-25 asks for the redirect host to be
 * shown): a loopback or an app's own scheme is an app on this device, which any local program
 * could pretend to be, so it is said so.
 */
function returnsTo(redirectUri: string): string {
  const target = redirectTarget(redirectUri);
  switch (target.kind) {
    case 'web':
      return `Approving sends you back to <strong>${escapeHtml(target.host)}</strong>.`;
    case 'loopback':
      return `Approving sends you back to an app on this device, at <strong>${escapeHtml(target.host)}</strong>; make sure you started this connection yourself.`;
    case 'app':
      return `Approving sends you back to the app that opens <strong>${escapeHtml(target.scheme)}:</strong> links on this device; make sure you started this connection yourself.`;
  }
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

/**
 * An authorization request refused before anyone approved the client: shown to the user, never
 * redirected, so the door cannot be used to bounce browsers to a registered address
 * (RFC 9700 §4.11.2).
 */
export function authorizationErrorPage(config: DoorConfig, error: OAuthError): Response {
  const body = `<h1>This request cannot continue</h1>
<p>${escapeHtml(error.description)}</p>
<p class="muted">Error <code>${escapeHtml(error.code)}</code>. Go back to the app that sent you here and connect again; if it happens again, tell the app's maker.</p>`;
  return new Response(
    layout({ title: 'Authorization failed', productName: config.productName, theme: config.theme, body }),
    { status: error.status, headers: pageHeaders(null) },
  );
}
