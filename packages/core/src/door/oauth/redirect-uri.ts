/**
 * Redirect URI rules of the door. Registered: `https`; `http` on a loopback host (native apps,
 * RFC 8252 §7.3); or an app's own private-use scheme (`cursor://…`, `com.example.app:/cb`, RFC
 * 8252 §7.1), except the schemes a browser handles itself (`javascript:`, `data:`, `file:`…).
 * Never a fragment (RFC 6749 §3.1.2) or userinfo.
 *
 * Matching is string for string: no prefix, no normalization, no wildcard. The one exception is
 * RFC 8252 §7.3: a registered loopback URI matches the same URI on any port, since a native app
 * listens on whichever port is free when the user signs in.
 */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
const MAX_REDIRECT_URI_LENGTH = 2000;

/**
 * Schemes a browser or an operating system handles itself: a redirect there runs script, reads
 * local files or leaves the app-to-app handoff that private-use schemes are for.
 */
const REFUSED_SCHEMES = new Set([
  'about',
  'blob',
  'chrome',
  'data',
  'file',
  'filesystem',
  'ftp',
  'intent',
  'javascript',
  'vbscript',
  'view-source',
  'ws',
  'wss',
]);

/** A loopback redirect URI, split around its port: `http://127.0.0.1` `:8080` `/callback`. */
const LOOPBACK_URI = /^(http:\/\/(?:127\.0\.0\.1|\[::1\]|localhost))(?::([1-9]\d{0,4}))?([/?].*)?$/s;

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
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'https' || scheme === 'http') {
    // Matched as written, but the browser goes where the parser sends it: the two must agree.
    if (!isWrittenAsParsed(value, url)) {
      return `redirect_uri must be written as a URL parser writes it (${url.href}): no backslashes, dot segments, default ports or upper-case hosts`;
    }
    if (scheme === 'https' || LOOPBACK_HOSTS.has(url.hostname)) return null;
    return 'redirect_uri must use https (http is allowed only on loopback: 127.0.0.1, [::1] or localhost)';
  }
  if (REFUSED_SCHEMES.has(scheme)) return `redirect_uri must not use the ${scheme}: scheme`;
  if (value.slice(url.protocol.length).length === 0) return 'redirect_uri must name a path after its scheme';
  return null;
}

/**
 * Whether an http(s) URI is the one its parse writes, an empty path aside: `https://app.example`
 * and `http://127.0.0.1:33418` (as VS Code registers it) are written `…/` by the parser, the
 * same address.
 */
function isWrittenAsParsed(value: string, url: URL): boolean {
  if (url.href === value) return true;
  const { origin } = url;
  return value.startsWith(origin) && `${origin}/${value.slice(origin.length)}` === url.href;
}

/**
 * Whether `candidate` is one of the registered URIs: exactly, or (a loopback URI) on another port.
 * Host, path and query still match string for string.
 */
export function isRegisteredRedirect(registered: readonly string[], candidate: string): boolean {
  if (registered.includes(candidate)) return true;
  const asked = loopbackWithoutPort(candidate);
  return asked !== null && registered.some((uri) => loopbackWithoutPort(uri) === asked);
}

/** A loopback URI with its port taken out, or null for any other URI (or a port out of range). */
function loopbackWithoutPort(uri: string): string | null {
  const match = LOOPBACK_URI.exec(uri);
  if (!match) return null;
  const [, origin, port, rest = ''] = match;
  if (port !== undefined && Number(port) > 65535) return null;
  return `${origin}${rest}`;
}

/**
 * The CSP source a page's form must allow for the browser to follow the answer to this URI: its
 * origin, or `scheme:` for an app's own scheme (whose URLs have no origin).
 */
export function formActionSource(redirectUri: string): string {
  const url = new URL(redirectUri);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return url.protocol;
  // CSP's host-source grammar has no IPv6 literals: browsers drop `http://[::1]:9405` as invalid
  // and then block the post. The scheme is the narrowest source that still names such a host.
  return url.hostname.startsWith('[') ? url.protocol : url.origin;
}

/** Where an answer to this URI lands, in words for the consent page. */
export type RedirectTarget =
  | { kind: 'web'; host: string }
  | { kind: 'loopback'; host: string }
  | { kind: 'app'; scheme: string };

export function redirectTarget(redirectUri: string): RedirectTarget {
  const url = new URL(redirectUri);
  if (url.protocol === 'https:') return { kind: 'web', host: url.host };
  if (url.protocol === 'http:') return { kind: 'loopback', host: url.host };
  return { kind: 'app', scheme: url.protocol.slice(0, -1) };
}
