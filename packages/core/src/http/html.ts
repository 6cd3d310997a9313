/**
 * The product's server-rendered HTML pages (the door's consent and connect pages, the CLI login
 * page, the development sign-in page) share this frame: escaping, one document skeleton, and the
 * security headers every page answers with. A page loads nothing and runs no script unless its
 * policy names one; every value written into a page goes through `escapeHtml`.
 */

/** HTML-escapes text for element content and quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!,
  );
}

/** What a page may do beyond showing itself; each entry is a list of CSP sources. */
export interface PagePolicy {
  /** Where the page's forms may post (and be redirected). None: forms are refused. */
  formTargets?: readonly string[];
  /** Scripts the page may run (`'nonce-…'`, `'sha256-…'`). None: no script runs. */
  scripts?: readonly string[];
  /** Where those scripts may connect. */
  connectTo?: readonly string[];
  /** Stylesheets. Default: inline styles only. */
  styles?: readonly string[];
  /** Images. None: no image loads. */
  images?: readonly string[];
}

/** A strict Content Security Policy: nothing but what the policy names, never framed. */
export function contentSecurityPolicy(policy: PagePolicy = {}): string {
  const directives = [
    "default-src 'none'",
    sources('script-src', policy.scripts),
    sources('connect-src', policy.connectTo),
    sources('style-src', policy.styles ?? ["'unsafe-inline'"]),
    sources('img-src', policy.images),
    `form-action ${policy.formTargets?.length ? policy.formTargets.join(' ') : "'none'"}`,
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ];
  return directives.filter((directive) => directive !== null).join('; ');
}

function sources(directive: string, list: readonly string[] | undefined): string | null {
  return list?.length ? `${directive} ${list.join(' ')}` : null;
}

/** Headers of every page: HTML, never cached, never sniffed or framed, its CSP. */
export function htmlPageHeaders(policy: PagePolicy = {}): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': contentSecurityPolicy(policy),
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    // Not no-referrer: under it browsers send `Origin: null` on a form post, which CSRF checks refuse.
    'referrer-policy': 'same-origin',
  };
}

/** The document around a page's body: its (escaped) title and its inline stylesheet. */
export function htmlDocument(page: { title: string; style: string; body: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)}</title>
<style>
${page.style}
</style>
</head>
<body>
${page.body}
</body>
</html>
`;
}

/** Markup already safe to write as is: built by `html`, or vouched for with `trustedHtml`. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** Marks markup this code wrote itself as safe (never pass it anything a user or tenant chose). */
export function trustedHtml(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** What a template may interpolate: text (escaped), safe markup, lists of either, or nothing. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

/**
 * A template tag that escapes every interpolated value unless it is `SafeHtml`, so a page built
 * of `html` fragments cannot write a tenant's text as markup by forgetting to escape it. Lists
 * are joined; `null`, `undefined` and `false` write nothing.
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += htmlOf(values[i]) + strings[i + 1]!;
  return new SafeHtml(out);
}

function htmlOf(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.value;
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map(htmlOf).join('');
  return escapeHtml(String(value));
}

/**
 * Where a form sends the browser to another site (a payment processor's checkout, a provider's
 * sign-in): a page that goes on there by itself, with a link besides. A redirect would not do:
 * the pages' CSP lets forms, and the redirects that answer them, reach their own origin only.
 */
export function leavingPage(target: string): string {
  const host = new URL(target).host;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${target}"><title>Continuing to ${host}</title></head>
<body><main><p>Continuing to ${host}…</p><p><a id="continue" href="${target}">Continue to ${host}</a></p></main></body></html>
`.value;
}
