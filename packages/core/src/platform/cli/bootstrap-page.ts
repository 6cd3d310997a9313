import { escapeHtml, htmlDocument, htmlPageHeaders } from '../../http/html.js';
import type { LoopbackCallback } from './loopback-callback.js';

/**
 * The HTML of `/dev/cli-bootstrap`. Every value written into a page is escaped; the pages load
 * nothing, and only the delivery page runs a script (nonce-bound, allowed to connect to exactly
 * the loopback origin of `service login`).
 */

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}
button{margin-top:1rem;padding:.5rem 1rem;font-size:1rem}.note{color:#555;font-size:.9rem}
.error{color:#b00020}code,pre{font-family:ui-monospace,monospace;font-size:.85rem}
pre{white-space:pre-wrap;word-break:break-all;background:#f4f4f4;padding:.75rem;border-radius:4px}`;

/** Headers of every page; `script` adds the delivery page's nonce and loopback origin. */
export function pageHeaders(script?: { nonce: string; connectTo: string }): Record<string, string> {
  return htmlPageHeaders({
    formTargets: ["'self'"],
    scripts: script ? [`'nonce-${script.nonce}'`] : [],
    connectTo: script ? [script.connectTo] : [],
  });
}

/** A platform page: its title, the shared stylesheet, and `body` (already escaped). */
export function layout(title: string, body: string): string {
  return htmlDocument({ title, style: STYLE, body });
}

/** A page that only explains a problem (bad link, expired form, signed out). */
export function messagePage(title: string, message: string, link?: { href: string; text: string }): string {
  const action = link ? `<p><a href="${escapeHtml(link.href)}">${escapeHtml(link.text)}</a></p>` : '';
  return layout(
    title,
    `<h1>${escapeHtml(title)}</h1>\n<p class="error" role="alert">${escapeHtml(message)}</p>\n${action}`,
  );
}

export interface ConsentView {
  email: string;
  workspace: string;
  callback: LoopbackCallback;
  mode: string;
  csrfToken: string;
}

/** The signed-in user confirms: issue a CLI key and hand it to the terminal on this computer. */
export function consentPage(view: ConsentView): string {
  return layout(
    'Log in the service CLI',
    `<h1>Log in the service CLI</h1>
<p>A terminal on this computer is waiting for a key: <code>service login</code>, listening on port
<strong id="port">${view.callback.port}</strong>.</p>
<p>Signed in as <strong id="email">${escapeHtml(view.email)}</strong>, workspace
<strong id="workspace">${escapeHtml(view.workspace)}</strong>.</p>
<p class="note">Issuing a key revokes the CLI key this account used before. Continue only if you just
ran <code>service login</code> yourself.</p>
<form method="post" action="cli-bootstrap">
<input type="hidden" name="cb" value="${escapeHtml(view.callback.url)}">
<input type="hidden" name="mode" value="${escapeHtml(view.mode)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(view.csrfToken)}">
<button type="submit" id="issue">Issue CLI key</button>
</form>`,
  );
}

/** What the delivery page posts to the loopback listener. */
export interface CliLoginPayload {
  apiKey: string;
  tenantId: string;
  appId: string | null;
  email: string | null;
  issuedAt: string;
}

/**
 * Posts the fresh key to the loopback listener. When the browser cannot reach it (the CLI runs
 * over SSH, in a container, or was stopped), the page shows a login code to paste into the
 * waiting terminal instead.
 */
export function deliveryPage(payload: CliLoginPayload, callback: LoopbackCallback, nonce: string): string {
  const code = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
  const data = jsonForScript({ cb: callback.url, payload, code });
  return layout(
    'Log in the service CLI',
    `<h1>Log in the service CLI</h1>
<p id="status" role="status">Sending the key to your terminal…</p>
<div id="fallback" hidden>
<p>Paste this login code into the terminal where <code>service login</code> is waiting:</p>
<pre id="code"></pre>
</div>
<noscript><p>JavaScript is off, so the key cannot be sent to your terminal. Paste this login code into
the terminal where <code>service login</code> is waiting:</p><pre>${escapeHtml(code)}</pre></noscript>
<script type="application/json" id="cli-login">${data}</script>
<script nonce="${nonce}">
(function () {
  var login = JSON.parse(document.getElementById('cli-login').textContent);
  var status = document.getElementById('status');
  function failed(reason) {
    status.textContent = 'Could not hand the key to your terminal at ' + login.cb + ' (' + reason + ').';
    document.getElementById('code').textContent = login.code;
    document.getElementById('fallback').hidden = false;
    document.body.setAttribute('data-state', 'failed');
  }
  fetch(login.cb, {
    method: 'POST',
    mode: 'cors',
    credentials: 'omit',
    cache: 'no-store',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(login.payload)
  }).then(function (response) {
    if (!response.ok) return failed('it answered ' + response.status);
    status.textContent = 'Done: your terminal is logged in. You can close this tab.';
    document.body.setAttribute('data-state', 'delivered');
  }, function () {
    failed('is service login still running?');
  });
})();
</script>`,
  );
}

/**
 * JSON safe to place inside `<script type="application/json">`: `<`, `>` and `&` are escaped so
 * no value can close the element, and U+2028/2029 so older parsers read it as one string.
 */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
