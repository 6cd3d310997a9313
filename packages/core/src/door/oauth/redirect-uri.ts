/**
 * Redirect URI rules of the door: `https`, or `http` on a loopback host only (native apps, RFC
 * 8252 §7.3); never a fragment (RFC 6749 §3.1.2) or userinfo. Matching is exact, string for
 * string: no prefix, no normalization, no wildcard.
 */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
const MAX_REDIRECT_URI_LENGTH = 2000;

/** Why a redirect URI is refused, or null when it is acceptable. */
export function redirectUriProblem(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0) return 'redirect_uris must be non-empty strings';
  if (value.length > MAX_REDIRECT_URI_LENGTH) return 'redirect_uri is too long';
  // The URL parser drops tabs, newlines and edge spaces, so what would be registered (and matched)
  // is not what a browser is sent to: a URI with them is refused, not normalized (RFC 3986 §2).
  if (/[\s\p{Cc}]/u.test(value)) return 'redirect_uri must not contain whitespace or control characters';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `redirect_uri is not an absolute URL: ${value}`;
  }
  if (value.includes('#')) return 'redirect_uri must not contain a fragment';
  if (url.username || url.password) return 'redirect_uri must not contain userinfo';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return 'redirect_uri must use https (http is allowed only on loopback: 127.0.0.1, [::1] or localhost)';
}

/** Exact string match against the registered URIs. */
export function isRegisteredRedirect(registered: readonly string[], candidate: string): boolean {
  return registered.includes(candidate);
}
