import type { Hono } from 'hono';
import { TrieRouter } from 'hono/router/trie-router';
import { canonicalError } from './errors.js';

/** The order `Allow` lists methods in. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * The methods each path of an app takes, read from its route table: what answers a request whose
 * method no route took (`DELETE /api/billing/balance`) with 405 and `Allow` rather than 404.
 *
 * Middleware (`use`, `all`: no method of its own) is left out, since it runs on paths whatever
 * they are; a GET route takes HEAD too, as the app answers HEAD with the GET route's headers.
 * Built once the app's routes are all added: a route added later is not seen.
 */
export function allowedMethods(app: { routes: Hono['routes'] }): (path: string) => string[] {
  const router = new TrieRouter<string>();
  for (const route of app.routes) {
    if (route.method === 'ALL') continue;
    router.add('ALL', route.path, route.method);
  }
  return (path) => {
    const methods = new Set<string>();
    for (const [method] of router.match('GET', path)[0]) methods.add(method);
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  };
}

function rank(method: string): number {
  const index = METHOD_ORDER.indexOf(method);
  return index === -1 ? METHOD_ORDER.length : index;
}

/**
 * The answer to a method a path does not take: 405 `method_not_allowed` in the canonical shape,
 * with `Allow` listing the methods it does.
 */
export function methodNotAllowed(method: string, allowed: readonly string[]): Response {
  return canonicalError(
    405,
    'method_not_allowed',
    `This address does not take ${method} requests; it takes ${allowed.join(', ')}`,
    {},
    { allow: allowed.join(', ') },
  );
}
