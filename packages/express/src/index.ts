/**
 * `@service/express`: mounts the service wire in an Express app. Only translation happens here
 * (Node request/response <-> web Request/Response); every decision is the wire's.
 *
 * @see docs/wire.md "Express"
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener, RequestError } from '@hono/node-server';
import { BASE_PATH, type Service } from '@service/core/wire';
import { type NodeRequestLike, parsedBodyOf, toWebRequest } from './node-request.js';
import { sendWebResponse } from './node-response.js';

export { toWebRequest } from './node-request.js';
export { sendWebResponse } from './node-response.js';

/** An Express-compatible middleware. */
export type Middleware = (req: NodeRequestLike, res: ServerResponse, next: (error?: unknown) => void) => void;

/** The subset of an Express app `mountService` uses. */
export interface ExpressAppLike {
  use(path: string, handler: Middleware): unknown;
}

type ServiceSource = Service | Promise<Service>;

/**
 * The wire as a middleware, to mount at `/api/service`. Answers every request under that path
 * (the wire's own 404 included); one outside it (a handler mounted at `/` or another path) goes on
 * to the host's routes (`next()`), with one warning naming the right mount path. The Node <-> web translation is Hono's own Node listener
 * (`@hono/node-server`): lazy requests, an abort signal fired when the client goes away,
 * responses streamed with backpressure. A failing service goes to `next(error)`.
 */
export function toExpressHandler(service: ServiceSource): Middleware {
  const resolved = Promise.resolve(service);
  let warned = false;
  let warnedMount = false;
  return (req, res, next) => {
    // Lower-cased as Express matches mount paths: `/API/Service` reached a right mount, and gets
    // the wire's own 404.
    if (!isWirePath(pathOf(req.originalUrl ?? req.url ?? '/').toLowerCase())) {
      // Mounted without a path, or at another one: the wire answers nothing out there, and its
      // 404 would hide every host route mounted after it.
      if (!warnedMount) {
        warnedMount = true;
        console.warn(mountWarning((req as { baseUrl?: string }).baseUrl));
      }
      return next();
    }
    // Express strips the mount path from `req.url`; the wire routes on the full path.
    if (req.originalUrl) req.url = req.originalUrl;
    const rewritten = adoptParsedBody(req);
    // The listener's env carries the Node request, whose socket gives the door the peer address;
    // `bodyRewritten` tells the wire the bytes are not the sender's (webhooks refuse to verify them).
    const fetchWire = async (request: Request, env: object) => {
      const wire = await resolved;
      if (!rewritten) return wire.fetch(request, env);
      if (!warned && wire.context.automations) {
        warned = true;
        console.warn(BODY_PARSER_WARNING);
      }
      return wire.fetch(request, { ...env, bodyRewritten: true });
    };
    const listener = getRequestListener(fetchWire, {
      overrideGlobalObjects: false,
      errorHandler: (error) => {
        // A request no URL can be made of (a malformed or missing Host) is the client's fault.
        if (error instanceof RequestError) return malformedRequest();
        next(error);
        return undefined;
      },
    });
    void listener(req, res);
  };
}

/**
 * A request whose URL cannot be built: the wire's own answer to a malformed URL, as the service
 * answers it directly (and Next.js before the handler).
 */
function malformedRequest(): Response {
  return Response.json(
    { error: { code: 'malformed_url', message: 'The request’s Host header or URL is malformed.' } },
    { status: 400, headers: { 'service-error-code': 'malformed_url' } },
  );
}

/** Said once per handler, at the first request outside the base path that reaches it. */
const mountWarning = (mountPath: string | undefined) =>
  `@service/express: the service's handler is mounted at '${mountPath || '/'}', but the service ` +
  `answers only under ${BASE_PATH}: requests outside it go on to the host's routes. Mount it with ` +
  `mountService(app, service), or app.use('${BASE_PATH}', toExpressHandler(service)).`;

/** Said once per handler, at the first request a body parser reached before the wire. */
const BODY_PARSER_WARNING =
  '@service/express: a body parser (express.json()?) read a request before the service, so its ' +
  'original bytes are gone and webhooks cannot be verified (they answer 500 raw_body_unavailable). ' +
  'Mount the service before any body parser (mountService(app, service) first, or ' +
  'http.createServer(withService(app, service))), or keep the bytes: ' +
  'express.json({ verify: (req, _res, buf) => { req.rawBody = buf; } }).';

/**
 * A body parser mounted before the wire has read the stream: hand the wire what it left (Hono's
 * listener reads `rawBody` when the stream is gone). True when those bytes are not the original
 * ones (re-serialized JSON).
 */
function adoptParsedBody(req: NodeRequestLike): boolean {
  const parsed = parsedBodyOf(req);
  if (!parsed) return false;
  req.rawBody = parsed.bytes;
  delete req.headers['content-length'];
  return !parsed.exact;
}

/**
 * The MCP door's origin-root discovery documents, to mount at `/.well-known`. Falls through
 * (`next()`) for every path the door does not own, and always when `mcp` is not configured.
 */
export function toWellKnownHandler(service: ServiceSource): Middleware {
  return (req, res, next) => {
    Promise.resolve(service)
      .then(async (s) => {
        const answer = await s.wellKnown(toWebRequest(req, res));
        if (answer) await sendWebResponse(answer, res);
        else next();
      })
      .catch((error: unknown) =>
        error instanceof RequestError ? sendWebResponse(malformedRequest(), res) : next(error),
      );
  };
}

/**
 * Mounts the wire at `/api/service` and the discovery handler at `/.well-known`. Mount it before
 * any body parser: a parsed JSON body is still handed over, but re-serialized, and webhooks then
 * refuse to verify it unless the parser kept the bytes (`express.json({ verify })` into `req.rawBody`).
 *
 * @example
 * const app = express();
 * mountService(app, await createService({ principal, model, tools }));
 * app.use(express.json()); // the host's own routes after
 */
export function mountService(app: ExpressAppLike, service: ServiceSource): void {
  app.use('/.well-known', toWellKnownHandler(service));
  app.use('/api/service', toExpressHandler(service));
}

/** A Node request listener (`http.createServer(listener)`). */
export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The fast path: a Node request listener that answers `/api/service` straight from the wire and
 * the door's `/.well-known` documents, and hands every other request to the Express app. Wire
 * requests skip Express's own per-request work, which costs about half the throughput of a
 * small JSON answer; the host's routes are untouched.
 *
 * @example
 * const app = express(); // the host's own routes, as usual
 * http.createServer(withService(app, service)).listen(3000); // instead of app.listen(3000)
 */
export function withService(
  app: RequestListener,
  service: ServiceSource,
  options: { onError?: (error: unknown) => void } = {},
): RequestListener {
  const onError =
    options.onError ?? ((error: unknown) => console.error('@service/express: the service failed', error));
  const wire = toExpressHandler(service);
  const wellKnown = toWellKnownHandler(service);
  return (req, res) => {
    const url = pathOf(req.url ?? '/');
    const fail = (error?: unknown) => {
      // Only a broken service gets here (the wire answers its own errors).
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ error: { code: 'internal_error', message: 'Internal server error.' } }));
      if (error) onError(error);
    };
    if (isWirePath(url)) return wire(req, res, fail);
    if (url.startsWith('/.well-known/')) {
      return wellKnown(req, res, (error?: unknown) => (error ? fail(error) : app(req, res)));
    }
    app(req, res);
  };
}

/** The path and query of a request target, in absolute form too (`GET http://host/path`). */
function pathOf(target: string): string {
  if (target.startsWith('/') || !URL.canParse(target)) return target;
  const { pathname, search } = new URL(target);
  return pathname + search;
}

function isWirePath(url: string): boolean {
  if (!url.startsWith(BASE_PATH)) return false;
  const next = url.charAt(BASE_PATH.length);
  return next === '' || next === '/' || next === '?';
}
