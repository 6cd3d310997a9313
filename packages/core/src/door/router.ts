/**
 * The door's paths under the MCP endpoint, routed by Hono as the wire's and the platform's are.
 * Each endpoint answers its own methods (a 405 with its own `Allow`, CORS preflights where
 * browsers call it); a path with no endpoint in the current mode is the door's JSON 404.
 *
 * Hono routes the path `createDoor` hands it in `env.path`: the request path with the base URL's
 * prefix taken off, exactly as sent. So a prefix in the base URL never becomes part of a route
 * pattern, and a percent-encoded path (`/mcp/%74oken`) is not decoded into an endpoint's.
 */
import { Hono } from 'hono';
import type { DoorContext } from './context.js';
import { withCors } from './cors.js';
import { metadataResponse, serverCard } from './discovery.js';
import type { TransportHandler } from './mcp/transport.js';
import { handleAuthorize } from './oauth/authorize.js';
import { notFound } from './oauth/errors.js';
import { handleFederate } from './oauth/federate.js';
import { handleRegister } from './oauth/register.js';
import { handleRevoke } from './oauth/revoke.js';
import { handleToken } from './oauth/token.js';
import { connectPage } from './pages/connect.js';

export interface DoorRouteBindings {
  /** The request path without the base URL's prefix: `/api/service/mcp` and below. */
  path: string;
  /** What the adapter knows of the TCP peer; registration limits count per client address. */
  connection: unknown;
}

export type DoorRouter = Hono<{ Bindings: DoorRouteBindings }>;

export function createDoorRouter(context: DoorContext, transport: TransportHandler): DoorRouter {
  const { config } = context;
  const app = new Hono<{ Bindings: DoorRouteBindings }>({
    getPath: (_request, options) => options?.env?.path ?? '',
  }).basePath(config.urls.mcpPathUnprefixed);

  app.all('/', (c) => transport.handle(c.req.raw));
  app.get('/connect', () => connectPage(config, serverCard(context)));
  app.all('/connect', () => new Response(null, { status: 405, headers: { allow: 'GET, HEAD' } }));
  // In remoteAs and broker mode another server issues the tokens: these endpoints do not exist.
  if (config.remoteAs === null) {
    app.all('/authorize', (c) => handleAuthorize(context, c.req.raw));
    app.all('/token', (c) => handleToken(context, c.req.raw, c.env.connection));
    app.all('/revoke', (c) => handleRevoke(context, c.req.raw));
    app.all('/register', (c) => handleRegister(context, c.req.raw, c.env.connection));
  }
  if (config.federationSecret) app.all('/federate', (c) => handleFederate(context, c.req.raw));
  app.all('/.well-known/oauth-protected-resource', (c) =>
    metadataResponse(context, 'protected-resource', c.req.raw),
  );
  app.all('/.well-known/oauth-authorization-server', (c) =>
    metadataResponse(context, 'authorization-server', c.req.raw),
  );
  // The MCP URL with a trailing slash (pasted into a client as copied) is not served: the
  // resource a token names must match exactly. The 404 says where the endpoint is instead.
  app.notFound((c) =>
    c.env.path === `${config.urls.mcpPathUnprefixed}/`
      ? withCors(notFound(`No MCP endpoint here: the MCP server's URL is ${config.urls.resource}`))
      : notFound(),
  );
  // A fault is answered where every door answer is guarded (createDoor), not by Hono's default.
  app.onError((error) => {
    throw error;
  });
  return app;
}
