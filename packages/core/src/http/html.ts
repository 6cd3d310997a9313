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
