import { escapeHtml, htmlDocument, htmlPageHeaders } from '../../http/html.js';

/**
 * The page an OAuth callback answers with. Opened in a popup by the dashboard, it posts the outcome
 * to `window.opener`, addressed to the platform's exact origin (never `*`, so no other page that
 * opened it hears the result), and closes. Opened without an opener it says what happened and
 * links back. Its one script runs under a per-response nonce; every value on it is escaped, and
 * the message travels as JSON in a non-executable element (`<` written as `\u003c`).
 *
 * @see docs/api/oauth.md "The callback page"
 */
export interface OAuthResultMessage {
  type: 'service:oauth';
  status: 'connected' | 'error';
  provider: string;
  connectionId?: string;
  error?: string;
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}
.error{color:#b00020}.done{color:#1b5e20}`;

/** The page and its headers (CSP naming the nonce). */
export function oauthResultPage(
  message: OAuthResultMessage,
  options: { targetOrigin: string; backTo: string; nonce: string },
): { html: string; headers: Record<string, string> } {
  const connected = message.status === 'connected';
  const title = connected ? 'Connected' : 'Not connected';
  const text = connected
    ? `Your ${message.provider} account is connected. You can close this window.`
    : `The ${message.provider} account was not connected: ${message.error ?? 'the authorization failed'}`;
  const body = `<h1>${escapeHtml(title)}</h1>
<p class="${connected ? 'done' : 'error'}" role="${connected ? 'status' : 'alert'}" id="outcome">${escapeHtml(text)}</p>
<p><a id="back" href="${escapeHtml(options.backTo)}">Back to the dashboard</a></p>
<script type="application/json" id="oauth-result">${jsonForScript({ message, targetOrigin: options.targetOrigin })}</script>
<script nonce="${escapeHtml(options.nonce)}">
(function () {
  var data = JSON.parse(document.getElementById('oauth-result').textContent);
  if (window.opener && !window.opener.closed) {
    window.opener.postMessage(data.message, data.targetOrigin);
    window.close();
  }
})();
</script>`;
  return {
    html: htmlDocument({ title, style: STYLE, body }),
    headers: htmlPageHeaders({ scripts: [`'nonce-${options.nonce}'`] }),
  };
}

/** JSON safe inside a script element: nothing in it can close the element or open a comment. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}
