import { type Context, Hono } from 'hono';
import { BalanceReader } from '../billing/balances.js';
import { createMeteringEngine } from '../billing/metering.js';
import { DEFAULT_MARGIN_PERCENT } from '../billing/pricing.js';
import { BillingReports } from '../billing/reports.js';
import { TenantConnections } from '../connections/tenant-connections.js';
import { EventStreamHub } from '../events/streams.js';
import { ownDomainOf } from '../http/cors.js';
import { flatError } from '../http/errors.js';
import { createJsonLogger, describeError, type Logger } from '../http/logger.js';
import { RateLimiter } from '../http/rate-limit.js';
import { requestIdFor } from '../http/request-id.js';
import { Accounts } from '../identity/accounts.js';
import { CliKeys } from '../identity/cli-keys.js';
import { createDevIdentityProvider, type DevIdentityProvider } from '../identity/dev-idp.js';
import { createIdentityVerifier, type IdentityVerifier, jwksUrlOf } from '../identity/jwt.js';
import { KeyStore } from '../identity/key-store.js';
import { secureCookiesFor } from '../identity/session-cookie.js';
import { SessionStore } from '../identity/sessions.js';
import { SshSessionStore } from '../identity/ssh-sessions.js';
import { ConnectionResolver } from '../proxy/access.js';
import { createProviderProxy } from '../proxy/create-proxy.js';
import { ProviderCatalog } from '../proxy/providers.js';
import { IdempotencyRecords } from '../store/idempotency.js';
import type { Store } from '../store/index.js';
import { startInstanceHeartbeat } from '../store/instances.js';
import { createRateLimitCounter } from '../store/rate-limit-hits.js';
import { createSealer, parseEncryptionKeys } from '../store/sealing.js';
import { cliRoutes } from './cli/index.js';
import { ConfigError, readPlatformEnv } from './config.js';
import {
  DEFAULT_RATE_LIMITS,
  type PlatformContext,
  type PlatformEnv,
  type PlatformRateLimits,
} from './context.js';
import { faultResponse, refusalOf, refusalResponse } from './errors.js';
import { authRoutes } from './routes/auth.js';
import { balanceRoutes } from './routes/balance.js';
import { connectionRoutes } from './routes/connections.js';
import { runtimeRoutes } from './routes/runtime.js';
import { spendRoutes } from './routes/spend.js';
import { usageRoutes } from './routes/usage.js';

export interface PlatformOptions {
  store: Store;
  /** Public URL of the platform. Default `SERVICE_BASE_URL`, else `http://localhost:8787`. */
  baseUrl?: string;
  /** Identity provider base URL. Default `SERVICE_IDP_URL`; unset runs the development IdP. */
  idpUrl?: string;
  /** Refuse development conveniences. Default: `NODE_ENV === 'production'`. */
  production?: boolean;
  /** Replaces JWT verification entirely (tests, custom IdPs). */
  identity?: IdentityVerifier;
  /** Reverse proxies trusted to append to `X-Forwarded-For`. Default `SERVICE_TRUSTED_PROXIES` or 0. */
  trustedProxies?: number;
  /** Domain whose origins CORS reflects. Default `SERVICE_CORS_DOMAIN`, else derived from the base URL. */
  corsDomain?: string;
  rateLimits?: Partial<PlatformRateLimits>;
  /** Where `/api/billing/balance` sends users to add credit. Default `{baseUrl}/billing`. */
  topUpUrl?: string;
  logger?: Logger;
  /** Seconds-scale cache of authenticated keys; bounds cross-instance revocation delay. */
  keyCacheTtlMs?: number;
  /** How long a balance read is served from memory (advisory reads). Default 1000 ms. */
  balanceCacheTtlMs?: number;
  /** Keys sealing stored credentials. Default `SERVICE_STORE_ENCRYPTION_KEY`; required in production. */
  encryptionKey?: string;
  /** Default margin on metered prices, in percent. Default `MARGIN_PERCENT`, else 20. */
  marginPercent?: string;
  /**
   * This instance's heartbeat in the store: every `beatMs` (default 2 s); counted dead `ttlMs`
   * (default 6 s) after its last beat, when the others let go of its holds, leases and stream slots.
   */
  instanceHeartbeat?: { beatMs?: number; ttlMs?: number };
  /** Event stream heartbeat, default 25 s; concurrent streams per app, default 5. */
  eventStreams?: { pingMs?: number; maxStreamsPerApp?: number };
  /** The fetch the provider proxy calls upstreams with. Default the global fetch. */
  upstreamFetch?: typeof fetch;
  /** Environment to read settings from. Default `process.env`. */
  env?: Record<string, string | undefined>;
}

export interface Platform {
  /** The web-standard handler. `env` may carry `{ remoteAddress }` of the connection. */
  fetch(request: Request, env?: unknown): Promise<Response>;
  /** The services the routes are built on. */
  readonly context: PlatformContext;
  /** The store the platform runs on (as given in the options; its owner closes it). */
  readonly store: Store;
  /** The built-in development identity provider, when it runs. */
  readonly devIdp: DevIdentityProvider | null;
  /** Stops listening for cross-instance notifications. The store stays open (its owner closes it). */
  close(): Promise<void>;
}

/**
 * The tenant HTTP API as one fetch handler.
 *
 * @example
 * const store = await createStore();
 * const platform = await createPlatform({ store });
 * serve({ fetch: platform.fetch, port: 8787 });
 */
export async function createPlatform(options: PlatformOptions): Promise<Platform> {
  const env = readPlatformEnv(options.env ?? process.env);
  const production = options.production ?? env.production;
  const baseUrl = (options.baseUrl ?? env.baseUrl ?? 'http://localhost:8787').replace(/\/+$/, '');
  const idpUrl = options.idpUrl ?? env.idpUrl;
  const db = options.store.db;

  if (production && !idpUrl && !options.identity) {
    throw new ConfigError(
      'SERVICE_IDP_URL is required in production: the built-in development identity provider is refused there.',
    );
  }
  const encryptionKey = options.encryptionKey ?? env.encryptionKey;
  if (production && !encryptionKey) {
    throw new ConfigError(
      'SERVICE_STORE_ENCRYPTION_KEY is required in production: stored credentials are sealed with it.',
    );
  }
  const sealer = encryptionKey ? createSealer(parseEncryptionKeys(encryptionKey)) : null;
  const marginPercent = options.marginPercent ?? env.marginPercent ?? DEFAULT_MARGIN_PERCENT;
  const devIdp = idpUrl || options.identity ? null : await createDevIdentityProvider(db, { baseUrl });
  const identity =
    options.identity ?? createIdentityVerifier({ jwks: idpUrl ? jwksUrlOf(idpUrl) : () => devIdp!.jwks() });

  const logger = options.logger ?? createJsonLogger();
  // The proxy settles a call after its response; a balance read here waits for that to land,
  // and each settlement forgets the balances it moved.
  let balances!: BalanceReader;
  const instance = await startInstanceHeartbeat(db, {
    ...options.instanceHeartbeat,
    // Its leases may have been let go while it was counted dead: calls go through the store.
    onLapsed: () => void metering.dropLeases().catch(() => {}),
    onError: (error) =>
      logger.warn('instance heartbeat failed', {
        error: error instanceof Error ? error.message : String(error),
      }),
  });
  const metering = createMeteringEngine(db, {
    instance,
    onSettled: (tenants) => {
      for (const tenant of tenants) balances.invalidate(tenant);
    },
  });
  balances = new BalanceReader(db, {
    ...(options.balanceCacheTtlMs !== undefined ? { ttlMs: options.balanceCacheTtlMs } : {}),
    before: (tenantId) => metering.pendingFor(tenantId),
  });
  const stopFollowingBalances = await balances.follow(options.store);
  await metering.follow(options.store);
  const events = await EventStreamHub.start(options.store, {
    logger,
    ...options.eventStreams,
    instanceId: instance.id,
  });
  const keys = new KeyStore(
    db,
    options.keyCacheTtlMs !== undefined ? { cacheTtlMs: options.keyCacheTtlMs } : {},
  );
  const context: PlatformContext = {
    keys,
    balances,
    identity,
    sessions: new SessionStore(db),
    accounts: new Accounts(db),
    cliKeys: new CliKeys(db, keys),
    sshSessions: new SshSessionStore(db),
    connections: new TenantConnections({ db, sealer, keys }),
    billing: new BillingReports(db),
    idempotency: new IdempotencyRecords(db),
    limiter: new RateLimiter(createRateLimitCounter(db)),
    logger,
    cors: { ownDomain: ownDomainOf(baseUrl, options.corsDomain ?? env.corsDomain) },
    rateLimits: { ...DEFAULT_RATE_LIMITS, ...options.rateLimits },
    sealer,
    metering,
    providers: new ProviderCatalog(db, sealer, marginPercent),
    connectionResolver: new ConnectionResolver(db),
    events,
    marginPercent,
    baseUrl,
    topUpUrl: options.topUpUrl ?? `${baseUrl}/billing`,
    trustedProxies: options.trustedProxies ?? env.trustedProxies ?? 0,
    secureCookies: secureCookiesFor(baseUrl),
  };

  const app = new Hono<PlatformEnv>();
  app.use(async (c, next) => {
    const started = performance.now();
    const requestId = requestIdFor(c.req.raw);
    c.set('requestId', requestId);
    c.set('errorShape', 'flat');
    await next();
    if (!c.get('requestIdSent')) setResponseHeader(c, 'x-request-id', requestId);
    context.logger.info('request', {
      request_id: requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
    });
  });

  app.get('/healthz', async (c) => {
    const ok = await options.store.ping();
    return c.json({ ok }, ok ? 200 : 503, { 'cache-control': 'no-store' });
  });
  app.route('/', balanceRoutes(context));
  app.route('/', runtimeRoutes(context));
  app.route('/', connectionRoutes(context));
  app.route('/', spendRoutes(context));
  app.route('/', usageRoutes(context));
  app.route(
    '/',
    createProviderProxy({
      keys: context.keys,
      providers: context.providers,
      connections: context.connectionResolver,
      metering: context.metering,
      logger,
      baseUrl,
      ...(options.upstreamFetch ? { fetch: options.upstreamFetch } : {}),
    }),
  );
  app.route('/', authRoutes(context));
  app.route('/', cliRoutes(context, { env: options.env ?? process.env, devSignIn: devIdp !== null }));
  if (devIdp) app.route('/auth/v1', devIdp.routes());

  app.notFound(() => flatError(404, 'Not found'));
  // The one place refusals become answers: helpers and handlers throw, this answers.
  app.onError((error, c) => {
    const refusal = refusalOf(error);
    if (refusal) return refusalResponse(refusal, c.get('errorShape'));
    const requestId = c.get('requestId');
    context.logger.error('unhandled error', {
      request_id: requestId,
      path: c.req.path,
      ...describeError(error),
    });
    return faultResponse(c.get('errorShape'), { 'x-request-id': requestId ?? '' });
  });

  return {
    fetch: async (request, connection) => app.fetch(request, connection),
    context,
    store: options.store,
    devIdp,
    close: async () => {
      await events.close();
      await stopFollowingBalances();
      await metering.settled();
      await metering.close();
      await instance.stop();
    },
  };
}

/**
 * Sets a header on the finished response in place. `c.header()` after the handler would rebuild
 * the response, which costs the Node adapter its fast path (a quarter of the throughput of a
 * small JSON answer); a response with immutable headers (one piped from `fetch`) is rebuilt.
 */
function setResponseHeader(c: Context, name: string, value: string): void {
  try {
    c.res.headers.set(name, value);
  } catch {
    c.header(name, value);
  }
}
