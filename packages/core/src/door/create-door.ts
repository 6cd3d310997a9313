/**
 * `createDoor(options)`: the MCP door as two web-standard handlers. `handle()` answers the door's
 * paths under `/api/service/mcp` (and null for every other path, so the wire goes on);
 * `wellKnown()` answers the four origin-root discovery paths and null for every other
 * `/.well-known` path, so a host's own metadata is never shadowed.
 *
 * @example
 * const door = createDoor({ mcp: { productName: 'Acme' }, oauth, store, tools, actAs });
 * const response = (await door.wellKnown(request)) ?? (await door.handle(request)) ?? hostApp(request);
 *
 * @see platform-spec.md "MCP door endpoints"; docs/door.md
 */
import { GrantStore } from '../agent/grants.js';
import { createJsonLogger, describeError } from '../http/logger.js';
import { RateLimiter } from '../http/rate-limit.js';
import { createAuditBatcher } from './audit-batch.js';
import { type DoorMode, type DoorOptions, resolveDoorConfig } from './config.js';
import type { DoorContext } from './context.js';
import { metadataResponse, serverCard, wellKnownDocument } from './discovery.js';
import { bearerOf, createBearerAuthenticator } from './mcp/bearer.js';
import { createRemoteAsVerifier } from './mcp/remote-as.js';
import { createTransportHandler } from './mcp/transport.js';
import { handleAuthorize } from './oauth/authorize.js';
import { notFound, oauthJson } from './oauth/errors.js';
import { handleFederate } from './oauth/federate.js';
import { handleRegister } from './oauth/register.js';
import { handleRevoke } from './oauth/revoke.js';
import { handleToken } from './oauth/token.js';
import { parseOverrides } from './overrides.js';
import { connectPage } from './pages/connect.js';
import { ClientStore } from './storage/clients.js';
import { DoorSessionStore } from './storage/sessions.js';
import { TokenFamilyStore } from './storage/token-families.js';
import { buildMenu } from './tool-menu.js';
import type { DoorUrls } from './urls.js';

export interface Door {
  /**
   * Answers a door path; null for any path that is not the door's. `connection` is what the
   * adapter knows of the TCP peer (`{ remoteAddress }`, or `@hono/node-server`'s env): with it,
   * registrations are rate limited per client address.
   */
  handle(request: Request, connection?: unknown): Promise<Response | null>;
  /** Answers the four origin-root discovery paths; null for anything else. */
  wellKnown(request: Request): Promise<Response | null>;
  /** `local` (the door issues tokens), `remote` (`remoteAs`) or `broker` (`SERVICE_MCP_BROKER_URL`). */
  readonly mode: DoorMode;
  readonly urls: DoorUrls;
  /** Withdraws a user's consent to a client: its tool calls fail closed from then on. */
  withdrawConsent(subject: string, clientId: string): Promise<void>;
  /** Revokes every authorization of a user and ends their sessions. */
  revokeUser(subject: string): Promise<void>;
  /** Writes the activity events still queued (call at shutdown, before closing the store). */
  close(): Promise<void>;
}

/** Expired codes, transactions, tokens and nonces are swept at most this often, off the request path. */
const SWEEP_EVERY_MS = 10 * 60 * 1000;

export function createDoor(options: DoorOptions): Door {
  const config = resolveDoorConfig(options);
  const now = options.now ?? Date.now;
  const db = options.store.db;
  const logger = options.logger ?? createJsonLogger();
  const grants = new TokenFamilyStore(db, now);
  const fetchImpl = options.fetch ?? fetch;
  const remote = config.remoteAs ? createRemoteAsVerifier(config.remoteAs, { fetch: fetchImpl, now }) : null;
  const cacheTtlMs = options.authCacheTtlMs ?? 2000;
  const bearer = createBearerAuthenticator({ grants, config, now }, remote, cacheTtlMs);
  const context: DoorContext = {
    config,
    db,
    approvalGrants: new GrantStore(db, now),
    audit: createAuditBatcher(db, logger),
    oauth: options.oauth,
    clients: new ClientStore(db, now, cacheTtlMs),
    grants,
    sessions: new DoorSessionStore(db, now),
    tools: options.tools ?? null,
    actAs: options.actAs ?? null,
    overrides: parseOverrides(options.overrides),
    logger,
    now,
    fetch: fetchImpl,
    limiter: new RateLimiter(db, { now }),
    tokenCache: bearer,
  };
  const menu = buildMenu(context.tools, context.overrides, logger);
  const transport = createTransportHandler(context, menu, bearer, options.progressIntervalMs);
  const { urls } = config;
  const local = config.remoteAs === null;
  let sweptAt = now();

  const route = async (request: Request, rest: string, connection: unknown): Promise<Response> => {
    switch (rest) {
      case '':
        return transport.handle(request);
      case '/connect':
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          return new Response(null, { status: 405, headers: { allow: 'GET, HEAD' } });
        }
        return connectPage(config, serverCard(context));
      case '/authorize':
        return local ? handleAuthorize(context, request) : notFound();
      case '/token':
        return local ? handleToken(context, request) : notFound();
      case '/revoke':
        return local ? handleRevoke(context, request) : notFound();
      case '/register':
        return local ? handleRegister(context, request, connection) : notFound();
      case '/federate':
        return config.federationSecret ? handleFederate(context, request) : notFound();
      case '/.well-known/oauth-protected-resource':
        return metadataResponse(context, 'protected-resource', request);
      case '/.well-known/oauth-authorization-server':
        return metadataResponse(context, 'authorization-server', request);
      default:
        return notFound();
    }
  };

  const guarded = async (request: Request, work: () => Promise<Response>): Promise<Response> => {
    maybeSweep();
    try {
      return await work();
    } catch (error) {
      logger.error('door.fault', {
        path: new URL(request.url).pathname,
        has_bearer: bearerOf(request) !== null,
        ...describeError(error),
      });
      return oauthJson({ error: 'server_error', error_description: 'Internal server error' }, 500);
    }
  };

  const maybeSweep = () => {
    if (now() - sweptAt < SWEEP_EVERY_MS) return;
    sweptAt = now();
    Promise.all([grants.sweep(), context.clients.sweep(), context.sessions.sweep()]).catch((error) =>
      logger.warn('door.sweep_failed', describeError(error)),
    );
  };

  return {
    mode: config.mode,
    urls,
    async handle(request, connection) {
      const rest = doorPath(new URL(request.url).pathname, urls);
      if (rest === null) return null;
      return guarded(request, () => route(request, rest, connection));
    },
    async wellKnown(request) {
      const pathname = new URL(request.url).pathname;
      const document = wellKnownDocument(context, pathname);
      if (document === null) return null;
      return guarded(request, async () => metadataResponse(context, document, request));
    },
    withdrawConsent: (subject, clientId) => context.clients.withdrawConsent(subject, clientId),
    close: () => context.audit.flush(),
    async revokeUser(subject) {
      await grants.revokeSubject(subject);
      await context.sessions.endSubject(subject);
      transport.clearCaches();
    },
  };
}

/** The part of a path after the MCP path (`''` for the endpoint itself), or null when not the door's. */
function doorPath(pathname: string, urls: DoorUrls): string | null {
  for (const base of [urls.mcpPath, urls.mcpPathUnprefixed]) {
    if (pathname === base) return '';
    if (pathname.startsWith(`${base}/`)) return pathname.slice(base.length);
  }
  return null;
}
