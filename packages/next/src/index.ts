/**
 * `@service/next`: the service wire as Next.js App Router route handlers. Route handlers
 * already speak web Request/Response, so each handler only forwards (better-auth's
 * `toNextJsHandler` does the same), with the caller's address when the host says where to read it.
 *
 * @see docs/wire.md "Next.js"
 */
import { isIP } from 'node:net';
import type { Service } from '@service/core/wire';

type ServiceSource = Service | Promise<Service> | (() => Service | Promise<Service>);
type Handler = (request: Request) => Promise<Response>;

/**
 * The route handlers of `app/api/service/[...service]/route.ts`. `OPTIONS` too: without it Next
 * answers preflights itself, with no CORS headers, and browser MCP clients cannot reach the door.
 */
export interface NextServiceHandlers {
  GET: Handler;
  POST: Handler;
  PUT: Handler;
  PATCH: Handler;
  DELETE: Handler;
  OPTIONS: Handler;
}

/** The handlers of `app/.well-known/[...path]/route.ts`: documents, and their CORS preflights. */
export interface NextWellKnownHandlers {
  GET: Handler;
  OPTIONS: Handler;
}

/**
 * Where the caller's address comes from. A route handler never sees the socket, so without one
 * of these the wire gets no address, and its per-address limits (the MCP door's registrations)
 * do not apply.
 */
export interface NextHandlerOptions {
  /**
   * Trust the reverse proxy in front of Next: the address is the last `X-Forwarded-For` entry
   * (the one that proxy appended or set), else `X-Real-IP`. Only behind a proxy that sets them:
   * `next start` keeps an `X-Forwarded-For` the caller sent, so without a proxy anyone can pick
   * their address.
   */
  trustProxy?: boolean;
  /** Reads the address another way (a platform's own header). Not with `trustProxy`. */
  clientAddress?: (request: Request) => string | null | undefined;
}

/**
 * Resolves the service once, on first use: a factory keeps `createService` (and the store it
 * opens) out of `next build`, which imports route modules without serving them.
 */
function lazy(source: ServiceSource): () => Promise<Service> {
  let service: Promise<Service> | undefined;
  return () => {
    if (!service) {
      const made = Promise.resolve().then(() => (typeof source === 'function' ? source() : source));
      service = made;
      // A factory that failed (its store briefly unreachable, say) is asked again next time.
      made.catch(() => {
        if (service === made) service = undefined;
      });
    }
    return service;
  };
}

/**
 * The wire's answer while the service cannot be made: 503 `unavailable` in its error shape, with
 * `Retry-After`, rather than the framework's own error page.
 */
function unavailable(error: unknown): Response {
  console.error('service unavailable:', error instanceof Error ? error.message : String(error));
  return Response.json(
    {
      error: {
        code: 'unavailable',
        message: 'The service is starting or briefly unavailable; retry shortly',
      },
    },
    { status: 503, headers: { 'retry-after': '2', 'cache-control': 'no-store' } },
  );
}

/** `use`'s answer with the service, or 503 `unavailable` while the service cannot be made. */
async function withService(
  service: () => Promise<Service>,
  use: (ready: Service) => Promise<Response>,
): Promise<Response> {
  let ready: Service;
  try {
    ready = await service();
  } catch (error) {
    return unavailable(error);
  }
  return use(ready);
}

/** The last entry a trusted proxy wrote: earlier entries are whatever the caller sent. */
function forwardedAddress(request: Request): string | undefined {
  const forwarded = request.headers.get('x-forwarded-for');
  if (forwarded !== null) return forwarded.split(',').at(-1)?.trim();
  return request.headers.get('x-real-ip')?.trim();
}

function addressReader(options: NextHandlerOptions): ((request: Request) => unknown) | null {
  if (options.trustProxy && options.clientAddress) {
    throw new TypeError('toNextHandlers: pass trustProxy or clientAddress, not both');
  }
  if (options.clientAddress) return options.clientAddress;
  return options.trustProxy ? forwardedAddress : null;
}

/**
 * @example
 * // app/api/service/[...service]/route.ts
 * export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = toNextHandlers(getService, { trustProxy: true });
 * export const dynamic = 'force-dynamic';
 */
export function toNextHandlers(source: ServiceSource, options: NextHandlerOptions = {}): NextServiceHandlers {
  const service = lazy(source);
  const readAddress = addressReader(options);
  const handler: Handler = async (request) => {
    const address = readAddress?.(request);
    // Only an IP address is one: anything else would become a limiter key of the caller's making.
    const connection = typeof address === 'string' && isIP(address) ? { remoteAddress: address } : undefined;
    return withService(service, (ready) => ready.fetch(request, connection));
  };
  return { GET: handler, POST: handler, PUT: handler, PATCH: handler, DELETE: handler, OPTIONS: handler };
}

/**
 * The handler of `app/.well-known/[...path]/route.ts`: the MCP door's discovery documents, or
 * the ordinary 404 for every other path (and always when `mcp` is not configured).
 */
export function toNextWellKnownHandler(source: ServiceSource): NextWellKnownHandlers {
  const service = lazy(source);
  const handler: Handler = (request) =>
    withService(
      service,
      async (ready) => (await ready.wellKnown(request)) ?? new Response('Not Found', { status: 404 }),
    );
  return { GET: handler, OPTIONS: handler };
}
