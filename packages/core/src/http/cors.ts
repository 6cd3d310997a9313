/**
 * CORS for the browser-callable balance endpoints: origins under the service's own domain are
 * reflected (with `Vary: Origin`), every other origin gets `*`. Bearer tokens, not cookies,
 * authenticate these routes, so `*` exposes nothing a page could not already fetch with the token.
 */
export interface CorsPolicy {
  /** Registrable domain whose origins are reflected, e.g. `example.com`. */
  ownDomain: string;
}

export const CORS_METHODS = 'GET, OPTIONS';
export const CORS_ALLOWED_HEADERS = 'Authorization, Content-Type';

/**
 * The domain whose origins count as our own: `SERVICE_CORS_DOMAIN` when set, else the base URL's
 * host without its first label when it has three or more (`api.example.com` -> `example.com`),
 * else the host itself (`localhost`, `example.com`, an IP address).
 */
export function ownDomainOf(baseUrl: string, override?: string): string {
  if (override) return override.toLowerCase().replace(/^\.+/, '');
  const host = new URL(baseUrl).hostname.toLowerCase();
  if (/^[\d.]+$/.test(host) || host.includes(':') || host.startsWith('[')) return host;
  const labels = host.split('.');
  return labels.length >= 3 ? labels.slice(1).join('.') : host;
}

export function isOwnOrigin(origin: string, policy: CorsPolicy): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return false;
  const host = url.hostname.toLowerCase();
  return host === policy.ownDomain || host.endsWith(`.${policy.ownDomain}`);
}

/** Response headers browser code may read besides the safelisted ones: how long to back off. */
export const CORS_EXPOSED_HEADERS = 'Retry-After';

/**
 * Headers to add to a response for a request carrying `origin` (null when it has none). Every
 * answer carries them, errors included: without them a browser hides a 429 or a 500 from the page
 * as an opaque network failure.
 */
export function corsHeaders(origin: string | null, policy: CorsPolicy): Record<string, string> {
  const allowed = origin && isOwnOrigin(origin, policy) ? origin : '*';
  return {
    'access-control-allow-origin': allowed,
    'access-control-expose-headers': CORS_EXPOSED_HEADERS,
    vary: 'Origin',
  };
}

/** The answer to a preflight. */
export function preflightResponse(origin: string | null, policy: CorsPolicy): Response {
  return new Response(null, {
    status: 204,
    headers: {
      ...corsHeaders(origin, policy),
      'access-control-allow-methods': CORS_METHODS,
      'access-control-allow-headers': CORS_ALLOWED_HEADERS,
      'access-control-max-age': '600',
    },
  });
}
