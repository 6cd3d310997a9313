import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import { NO_STORE } from '../../http/errors.js';
import { urlProblem } from '../../http/input-guard.js';
import { PROXY_PREFIX } from '../../proxy/create-proxy.js';
import type { PlatformEnv } from '../context.js';
import { type ErrorShape, PlatformError } from '../errors.js';

/**
 * The input guard on every platform URL, before any route: a path segment or query value with a
 * NUL, or a percent-encoding that does not decode, is a 400 in the route's error shape, and so is
 * a query parameter of the API given twice. The
 * proxy's path is checked up to the provider (the rest is forwarded as sent, never stored).
 * Bodies are guarded where they are parsed (`readJsonBody`, the development IdP's forms).
 * The refusal is never cached: it comes before the routes that mark their answers `no-store`.
 * Given `page`, a browser asking for a page (`/billing?cursor=%00`) is answered by it instead,
 * with the same 400.
 *
 * @see docs/errors.md "Input rules"
 */
export function guardUrl(page?: (c: Context<PlatformEnv>, problem: string) => Promise<Response>) {
  return createMiddleware<PlatformEnv>(async (c, next) => {
    const url = new URL(c.req.url);
    const proxied = isProxyPath(url.pathname);
    const problem = urlProblem(url, proxied ? { pathSegments: 2 } : {});
    const detail = problem ?? (proxied ? null : repeatedQueryName(url));
    if (!detail) return next();
    if (page && !proxied && isPageRequest(c)) return page(c, detail);
    const shape = errorShapeOfPath(url.pathname);
    throw new PlatformError(400, `Invalid request: ${detail}`, {
      shape,
      code: shape === 'canonical' ? 'validation_failed' : 'INVALID_REQUEST',
      headers: NO_STORE,
    });
  });
}

/** A browser asking for a page: HTML accepted, and not an API path (whose clients get JSON). */
export function isPageRequest(c: Context<PlatformEnv>): boolean {
  return !c.req.path.startsWith('/api/') && (c.req.header('accept') ?? '').includes('text/html');
}

/**
 * A query parameter of the API given twice (`?days=3&days=90`): the routes read one value, and
 * picking the first (or last) silently would answer a question the caller may not have asked.
 * The connector OAuth callback is left alone: its query is the provider's, and its answer a page.
 */
function repeatedQueryName(url: URL): string | null {
  if (!url.pathname.startsWith('/api/') || OAUTH_CALLBACK_PATH.test(url.pathname)) return null;
  const seen = new Set<string>();
  for (const name of url.searchParams.keys()) {
    if (seen.has(name)) return `query parameter ${name} is repeated`;
    seen.add(name);
  }
  return null;
}
const OAUTH_CALLBACK_PATH = /^\/api\/oauth\/[^/]+\/callback$/;

/**
 * The error shape of the route a path belongs to, for refusals made before the route runs. It
 * mirrors what each route declares (`c.set('errorShape', ...)`); the fuzz suite checks both agree.
 */
export function errorShapeOfPath(pathname: string): ErrorShape {
  if (isProxyPath(pathname)) return 'canonical';
  if (NESTED_PATHS.has(pathname)) return 'nested';
  if (pathname === '/api/deployments/me/events') return 'canonical';
  if (TOOL_DETAIL_PATH.test(pathname) && !FLAT_TOOL_LISTS.has(pathname)) return 'string';
  return 'flat';
}

/** A tool's detail and its usage framing answer `{ error }` bodies (the lists never refuse). */
const TOOL_DETAIL_PATH = /^\/api\/tools\/[^/]+(\/usage-framing)?$/;
const FLAT_TOOL_LISTS = new Set(['/api/tools/catalog', '/api/tools/deployable']);

const NESTED_PATHS = new Set(['/api/billing/balance', '/api/v1/balance', '/api/deployments/me/connections']);

function isProxyPath(pathname: string): boolean {
  return pathname === PROXY_PREFIX || pathname.startsWith(`${PROXY_PREFIX}/`);
}
