/**
 * The sign-in stand-in's browser page: `GET /login` shows a one-field form (no password: any
 * email address signs in as that user) that posts back with the page the user was headed to, e.g.
 * the MCP door's consent page. No JavaScript; every interpolated value is HTML-escaped.
 */

/** Headers of the page: no caching, forms only to this origin, never framed. */
export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // Not no-referrer: under it browsers send `Origin: null` with the form post, which is refused.
  'referrer-policy': 'same-origin',
};

export function signInPage(options: { productName: string; returnTo: string; error?: string }): string {
  const name = escapeHtml(options.productName);
  const error = options.error ? `<p class="error" role="alert">${escapeHtml(options.error)}</p>\n` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · ${name}</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; background: #f6f7f9; color: #1c1e21; margin: 0; }
main { max-width: 24rem; margin: 12vh auto; background: #fff; padding: 2rem; border-radius: 12px; box-shadow: 0 1px 4px rgba(0,0,0,.08); }
h1 { font-size: 1.35rem; margin: 0 0 .5rem; }
p { color: #555; margin: 0 0 1rem; }
.error { color: #b42318; }
label { display: block; font-weight: 600; margin-bottom: .25rem; }
input[type=email] { box-sizing: border-box; width: 100%; padding: .6rem; font: inherit; border: 1px solid #c8ccd2; border-radius: 8px; }
button { margin-top: 1rem; width: 100%; padding: .7rem; font: inherit; font-weight: 600; color: #fff; background: #2f5bea; border: 0; border-radius: 8px; cursor: pointer; }
</style>
</head>
<body>
<main>
<h1>Sign in to ${name}</h1>
<p>A demo sign-in: no password, any email address signs you in as that user.</p>
${error}<form method="post" action="/login">
<label for="email">Email</label>
<input id="email" name="email" type="email" required maxlength="255" autocomplete="email" placeholder="demo@example.com" autofocus>
<input type="hidden" name="return_to" value="${escapeHtml(options.returnTo)}">
<button type="submit">Sign in</button>
</form>
</main>
</body>
</html>
`;
}

/**
 * Where to send the browser after signing in: `value` when it is a URL on this host (absolute or
 * a path), else `/`. Never another origin, so the page cannot be used as an open redirect.
 */
export function returnTarget(value: unknown, origin: string): string {
  if (typeof value !== 'string' || value === '' || value.length > 4096) return '/';
  try {
    const url = new URL(value, origin);
    return url.origin === origin ? url.href : '/';
  } catch {
    return '/';
  }
}

/** HTML-escapes text for element content and quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!,
  );
}
