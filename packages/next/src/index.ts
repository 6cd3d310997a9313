/**
 * `@service/next`: the service wire as Next.js App Router route handlers. Route handlers
 * already speak web Request/Response, so each handler only forwards (better-auth's
 * `toNextJsHandler` does the same).
 *
 * @see docs/wire.md "Next.js"
 */
import type { Service } from '@service/core/wire';

type ServiceSource = Service | Promise<Service> | (() => Service | Promise<Service>);
type Handler = (request: Request) => Promise<Response>;

/** The route handlers of `app/api/service/[...service]/route.ts`. */
export interface NextServiceHandlers {
  GET: Handler;
  POST: Handler;
  PUT: Handler;
  PATCH: Handler;
  DELETE: Handler;
}

/**
 * Resolves the service once, on first use: a factory keeps `createService` (and the store it
 * opens) out of `next build`, which imports route modules without serving them.
 */
function lazy(source: ServiceSource): () => Promise<Service> {
  let service: Promise<Service> | undefined;
  return () => {
    service ??= Promise.resolve(typeof source === 'function' ? source() : source);
    return service;
  };
}

/**
 * @example
 * // app/api/service/[...service]/route.ts
 * export const { GET, POST, PUT, PATCH, DELETE } = toNextHandlers(() => getService());
 * export const dynamic = 'force-dynamic';
 */
export function toNextHandlers(source: ServiceSource): NextServiceHandlers {
  const service = lazy(source);
  const handler: Handler = async (request) => (await service()).fetch(request);
  return { GET: handler, POST: handler, PUT: handler, PATCH: handler, DELETE: handler };
}

/**
 * The handler of `app/.well-known/[...path]/route.ts`: the MCP door's discovery documents, or
 * the ordinary 404 for every other path (and always when `mcp` is not configured).
 */
export function toNextWellKnownHandler(source: ServiceSource): { GET: Handler } {
  const service = lazy(source);
  return {
    GET: async (request) =>
      (await (await service()).wellKnown(request)) ?? new Response('Not Found', { status: 404 }),
  };
}
