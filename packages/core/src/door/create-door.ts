/**
 * `createDoor(options)`: the MCP door as two web-standard handlers. `handle()` answers the door's
 * paths under `/api/service/mcp` (and null for every other path, so the wire goes on);
 * `wellKnown()` answers the origin-root discovery paths and null for every other
 * `/.well-known` path, so a host's own metadata is never shadowed.
 *
 * @example
 * const door = createDoor({ mcp: { productName: 'Acme' }, oauth, store, tools, actAs });
 * const response = (await door.wellKnown(request)) ?? (await door.handle(request)) ?? hostApp(request);
 *
 * @see docs/door.md
 */
import { AuditLog } from '../agent/audit.js';
import { GrantStore } from '../agent/grants.js';
import { FailedCredentialThrottle } from '../http/credential-throttle.js';
import { createJsonLogger, describeError, type Logger } from '../http/logger.js';
import { RateLimiter } from '../http/rate-limit.js';
import { isStoreUnavailable, STORE_RETRY_AFTER_SECONDS } from '../store/availability.js';
import { createRateLimitCounter } from '../store/rate-limit-hits.js';
import { type DoorMode, type DoorOptions, resolveDoorConfig } from './config.js';
import type { DoorContext } from './context.js';
import { metadataResponse, wellKnownDocument } from './discovery.js';
import { bearerOf, createBearerAuthenticator } from './mcp/bearer.js';
import { createRemoteAsVerifier } from './mcp/remote-as.js';
import { createTransportHandler } from './mcp/transport.js';
import { ClientIdDocuments } from './oauth/client-id-documents.js';
import { oauthJson } from './oauth/errors.js';
import { pinnedHttpsTransport } from './oauth/pinned-https.js';
import { parseOverrides } from './overrides.js';
import { createDoorRouter } from './router.js';
import { ClientStore, type Consent } from './storage/clients.js';
import { DoorSessionStore } from './storage/sessions.js';
import { followRevocations, TokenFamilyStore } from './storage/token-families.js';
import { buildMenu } from './tool-menu.js';
import type { DoorUrls } from './urls.js';

export interface Door {
  /**
   * Answers a door path; null for any path that is not the door's. `connection` is what the
   * adapter knows of the TCP peer (`{ remoteAddress }`, or `@hono/node-server`'s env): with it,
   * registrations are rate limited per client address.
   */
  handle(request: Request, connection?: unknown): Promise<Response | null>;
  /** Answers the origin-root discovery paths; null for anything else. */
  wellKnown(request: Request): Promise<Response | null>;
  /** `local` (the door issues tokens), `remote` (`remoteAs`) or `broker` (`SERVICE_MCP_BROKER_URL`). */
  readonly mode: DoorMode;
  readonly urls: DoorUrls;
  /** The clients a user approved (their standing consents), most recently approved first. */
  consentsOf(subject: string): Promise<Consent[]>;
  /**
   * Withdraws a user's consent to a client and disconnects it: the authorizations the user gave
   * it are revoked and its sessions ended, so its next MCP request is a 401. True when there was
   * a consent to withdraw.
   */
  withdrawConsent(subject: string, clientId: string): Promise<boolean>;
  /** Revokes every authorization of a user and ends their sessions. */
  revokeUser(subject: string): Promise<void>;
  /**
   * Stops following revocations and writes the activity events still queued (call at shutdown,
   * before closing the store).
   */
  close(): Promise<void>;
}

/** Expired codes, transactions, tokens and nonces are swept at most this often, off the request path. */
const SWEEP_EVERY_MS = 10 * 60 * 1000;

export function createDoor(options: DoorOptions): Door {
  const config = resolveDoorConfig(options);
  const now = options.now ?? Date.now;
  const db = options.store.db;
  const logger = options.logger ?? createJsonLogger();
  const { urls } = config;
  const tokenFamilies = new TokenFamilyStore(db, now, {
    resource: urls.resource,
    refreshGraceMs: config.refreshGraceMs,
    refreshMaxAgeMs: config.refreshMaxAgeMs,
    // Every revocation made here, whatever caused it, applies to this instance's cache at once.
    onRevoked: () => bearer.clear(),
  });
  const fetchImpl = options.fetch ?? fetch;
  const remote = config.remoteAs ? createRemoteAsVerifier(config.remoteAs, { fetch: fetchImpl, now }) : null;
  const cacheTtlMs = options.authCacheTtlMs ?? 2000;
  const bearer = createBearerAuthenticator({ grants: tokenFamilies, config, now }, remote, cacheTtlMs);
  // Revocations made on other instances reach this one through the store's notifications.
  const revocations = followRevocationsUntilClosed(
    options.store,
    urls.resource,
    () => bearer.clear(),
    logger,
  );
  const limiter = new RateLimiter(createRateLimitCounter(db), { now });
  const context: DoorContext = {
    config,
    approvalGrants: new GrantStore(db, now),
    audit: options.audit ?? new AuditLog(db, logger),
    oauth: options.oauth,
    clients: new ClientStore(
      db,
      now,
      cacheTtlMs,
      new ClientIdDocuments(options.clientDocumentTransport ?? pinnedHttpsTransport, now),
      urls.resource,
    ),
    grants: tokenFamilies,
    sessions: new DoorSessionStore(db, now, urls.resource),
    tools: options.tools ?? null,
    actAs: options.actAs ?? null,
    overrides: parseOverrides(options.overrides),
    logger,
    now,
    fetch: fetchImpl,
    limiter,
    credentialThrottle: config.failedCredentialLimit
      ? new FailedCredentialThrottle(limiter, config.failedCredentialLimit, now)
      : null,
  };
  const menu = buildMenu(context.tools, context.overrides, logger);
  const transport = createTransportHandler(context, menu, bearer, options.progressIntervalMs);
  const router = createDoorRouter(context, transport);
  let sweptAt = now();

  /**
   * Every answer of the door: a database that cannot be reached answers 503
   * `temporarily_unavailable` with `Retry-After`; any other fault is logged and answered with a
   * generic OAuth 500.
   */
  const guarded = async (request: Request, work: () => Response | Promise<Response>): Promise<Response> => {
    maybeSweep();
    try {
      return await work();
    } catch (error) {
      if (isStoreUnavailable(error)) {
        logger.warn('door.store_unavailable', {
          path: new URL(request.url).pathname,
          error_message: error instanceof Error ? error.message : String(error),
        });
        return oauthJson(
          {
            error: 'temporarily_unavailable',
            error_description: 'The service is briefly unavailable; try again shortly.',
          },
          503,
          { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) },
        );
      }
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
    Promise.all([tokenFamilies.sweep(), context.clients.sweep(), context.sessions.sweep()]).catch((error) =>
      logger.warn('door.sweep_failed', describeError(error)),
    );
  };

  return {
    mode: config.mode,
    urls,
    async handle(request, connection) {
      const path = doorPathOf(new URL(request.url).pathname, urls);
      if (path === null) return null;
      return guarded(request, () => router.fetch(request, { path, connection }));
    },
    async wellKnown(request) {
      const pathname = new URL(request.url).pathname;
      const document = wellKnownDocument(context, pathname);
      if (document === null) return null;
      return guarded(request, () => metadataResponse(context, document, request));
    },
    consentsOf: (subject) => context.clients.consentsOf(subject),
    async withdrawConsent(subject, clientId) {
      const withdrawn = await context.clients.withdrawConsent(subject, clientId);
      await tokenFamilies.revokeSubject(subject, clientId);
      await context.sessions.endSubject(subject, clientId);
      transport.clearCaches();
      return withdrawn;
    },
    close: async () => {
      await revocations.stop();
      await context.audit.flush();
    },
    async revokeUser(subject) {
      await tokenFamilies.revokeSubject(subject);
      await context.sessions.endSubject(subject);
      transport.clearCaches();
    },
  };
}

/**
 * A path at or below the MCP path, with the base URL's prefix taken off (`/api/service/mcp/...`,
 * as the router matches it), or null when the path is not the door's.
 */
function doorPathOf(pathname: string, urls: DoorUrls): string | null {
  for (const base of [urls.mcpPath, urls.mcpPathUnprefixed]) {
    if (pathname === base || pathname.startsWith(`${base}/`)) {
      return urls.mcpPathUnprefixed + pathname.slice(base.length);
    }
  }
  return null;
}

/** How long to wait before listening again when the store's listener could not be had. */
const REFOLLOW_MS = 2000;

/**
 * Follows revocations until `stop()`. A listener the store cannot give now (the database is
 * away at boot) is asked for again every two seconds; meanwhile the token cache's lifetime bounds
 * how late another instance's revocation is seen, and the cache is cleared once it is back.
 */
function followRevocationsUntilClosed(
  store: DoorOptions['store'],
  resource: string,
  onRevoked: () => void,
  logger: Logger,
): { stop(): Promise<void> } {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let unfollow: (() => Promise<void>) | null = null;
  let failed = false;
  const attempt = async () => {
    try {
      unfollow = await followRevocations(store, resource, onRevoked);
      if (stopped) await unfollow?.();
      else if (failed) onRevoked();
    } catch (error) {
      if (!failed) logger.warn('door.revocations_not_followed', describeError(error));
      failed = true;
      if (stopped) return;
      timer = setTimeout(() => void attempt(), REFOLLOW_MS);
      timer.unref?.();
    }
  };
  const first = attempt();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await first;
      await unfollow?.();
    },
  };
}
