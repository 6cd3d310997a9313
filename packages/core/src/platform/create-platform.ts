import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { BalanceReader } from '../billing/balances.js';
import { openSettlementJournal } from '../billing/journal.js';
import { createMeteringEngine } from '../billing/metering.js';
import { Operators } from '../billing/operators.js';
import { DevPaymentProcessor } from '../billing/payments/dev-processor.js';
import { StripePaymentProcessor, type StripeSettings } from '../billing/payments/stripe-processor.js';
import { DEFAULT_MARGIN_PERCENT } from '../billing/pricing.js';
import { BillingReports } from '../billing/reports.js';
import { Integrations } from '../catalog/integrations.js';
import { PublicPricing } from '../catalog/pricing.js';
import { ToolCatalog } from '../catalog/tools.js';
import { ConnectorOAuth } from '../connections/connector-oauth.js';
import { EndUserConnections } from '../connections/end-user-connections.js';
import { type OAuthClientInput, OAuthClients } from '../connections/oauth-clients.js';
import { TokenRefresher } from '../connections/oauth-refresh.js';
import { TenantConnections } from '../connections/tenant-connections.js';
import type { Deployer } from '../deploy/deployer.js';
import { Deployments } from '../deploy/deployments.js';
import { LocalDeployer } from '../deploy/local-deployer.js';
import { EventStreamHub } from '../events/streams.js';
import { allowedMethods, methodNotAllowed } from '../http/allowed-methods.js';
import { ownDomainOf } from '../http/cors.js';
import { FailedCredentialThrottle } from '../http/credential-throttle.js';
import { flatError } from '../http/errors.js';
import { createJsonLogger, describeError, type Logger } from '../http/logger.js';
import { RateLimiter } from '../http/rate-limit.js';
import { requestIdFor } from '../http/request-id.js';
import { Accounts } from '../identity/accounts.js';
import { CliKeys } from '../identity/cli-keys.js';
import {
  createDevIdentityProvider,
  DEV_TOKEN_AUDIENCE,
  type DevIdentityProvider,
} from '../identity/dev-idp.js';
import { Invitations } from '../identity/invitations.js';
import {
  createIdentityVerifier,
  type IdentityVerifier,
  identityTokenChecks,
  jwksUrlOf,
} from '../identity/jwt.js';
import { KeyStore } from '../identity/key-store.js';
import { Members } from '../identity/members.js';
import { secureCookiesFor } from '../identity/session-cookie.js';
import { SessionStore } from '../identity/sessions.js';
import { SshSessionStore } from '../identity/ssh-sessions.js';
import { TenantKeys } from '../identity/tenant-keys.js';
import { TenantStatuses } from '../identity/tenant-status.js';
import { Workspaces } from '../identity/workspaces.js';
import { ConnectionResolver } from '../proxy/access.js';
import { createProviderProxy, PROXY_PREFIX } from '../proxy/create-proxy.js';
import { createProxyListener, isPlainProxyUrl } from '../proxy/node-listener.js';
import { ProviderCatalog } from '../proxy/providers.js';
import { createProxyCore } from '../proxy/proxy-core.js';
import { fetchUpstream, pooledUpstream } from '../proxy/upstream.js';
import { isStoreUnavailable, STORE_RETRY_AFTER_SECONDS } from '../store/availability.js';
import { followCatalogChanges } from '../store/catalog-changes.js';
import { IdempotencyRecords } from '../store/idempotency.js';
import type { Store } from '../store/index.js';
import { startInstanceHeartbeat } from '../store/instances.js';
import { createRateLimitCounter } from '../store/rate-limit-hits.js';
import { createSealer, parseEncryptionKeys } from '../store/sealing.js';
import { appProxyRoutes, createUpgradeHandler, type UpgradeHandler } from './app-proxy.js';
import { cliRoutes } from './cli/index.js';
import { ConfigError, readPlatformEnv } from './config.js';
import {
  DEFAULT_RATE_LIMITS,
  type PlatformContext,
  type PlatformEnv,
  type PlatformRateLimits,
} from './context.js';
import { DASHBOARD_PAGES } from './dashboard/pages/index.js';
import { dashboardRefusalPage, dashboardRoutes } from './dashboard/routes.js';
import { type ErrorShape, faultResponse, refusalOf, refusalResponse, unavailableResponse } from './errors.js';
import { guardUrl, isPageRequest } from './internal/input-guard.js';
import { DevMailbox, type Mailer } from './mailer.js';
import { oauthClientsFromEnv } from './oauth-env.js';
import { adminRoutes } from './routes/admin.js';
import { adminOAuthRoutes } from './routes/admin-oauth.js';
import { adminToolRoutes } from './routes/admin-tools.js';
import { appRoutes } from './routes/apps.js';
import { authRoutes } from './routes/auth.js';
import { balanceRoutes } from './routes/balance.js';
import { billingRoutes } from './routes/billing.js';
import { billingPageRoutes } from './routes/billing-pages.js';
import { catalogAssetRoutes } from './routes/catalog-assets.js';
import { connectionRoutes } from './routes/connections.js';
import { deployRoutes } from './routes/deploy.js';
import { devMailboxRoutes } from './routes/dev-mailbox.js';
import { integrationRoutes } from './routes/integrations.js';
import { invitationPageRoutes } from './routes/invitation-page.js';
import { keyRoutes } from './routes/keys.js';
import { memberRoutes } from './routes/members.js';
import { oauthRoutes } from './routes/oauth.js';
import { pricingRoutes } from './routes/pricing.js';
import { runtimeRoutes } from './routes/runtime.js';
import { spendRoutes } from './routes/spend.js';
import { toolRoutes } from './routes/tools.js';
import { usageRoutes } from './routes/usage.js';
import { workspaceRoutes } from './routes/workspaces.js';

export interface PlatformOptions {
  store: Store;
  /** The dashboard at `/`: where a configured IdP signs a browser in, how often live figures refresh. */
  dashboard?: { signInUrl?: string; livePollMs?: number };
  /** Public URL of the platform. Default `SERVICE_BASE_URL`, else `http://localhost:8787`. */
  baseUrl?: string;
  /** Identity provider base URL. Default `SERVICE_IDP_URL`; unset runs the development IdP. */
  idpUrl?: string;
  /** The `iss` identity tokens must carry. Default `SERVICE_IDP_ISSUER`, else `{idpUrl}/auth/v1`. */
  idpIssuer?: string;
  /** The `aud` identity tokens must carry. Default `SERVICE_IDP_AUDIENCE`, else `authenticated`. */
  idpAudience?: string;
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
  /**
   * How long an authenticated key is cached, default 2000 ms. Revocations reach other instances'
   * caches by notification; this bounds the delay only while notifications are not received.
   */
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
  /**
   * The fetch the provider proxy calls upstreams with. Default: pooled keep-alive connections
   * (undici), without `fetch`.
   */
  upstreamFetch?: typeof fetch;
  /** Environment to read settings from. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * Folder of the settlement journal: answered metered calls are recorded there, on disk,
   * before their answer ends, and settled from it after a stop, a crash or a store outage.
   * Unset: no journal (calls not yet settled wait in memory only). `pnpm start` sets it.
   */
  journalDir?: string;
  /** Emails of platform admins (case-insensitive). Default `SERVICE_ADMIN_EMAILS`, else none. */
  adminEmails?: string[];
  /**
   * Sends invitation mail. Default outside production: the development mailbox (nothing is sent;
   * `/dev/mailbox` shows it). In production without one, invitations are made and their links
   * handed to the inviting owner only.
   */
  mailer?: Mailer;
  /** The Stripe processor. Default from `STRIPE_SECRET_KEY` and `STRIPE_WEBHOOK_SECRET`, else none. */
  stripe?: StripeSettings;
  /** Milliseconds since the epoch, for the catalog's caches; injectable for tests. Default `Date.now`. */
  now?: () => number;
  /**
   * Connector OAuth: how often this instance renews tokens about to expire (default 60 s; 0 never),
   * how close to expiry a token is renewed (default 5 minutes), and the fetch that reaches
   * providers' token endpoints (default the global fetch).
   */
  connectorOAuth?: { refreshEveryMs?: number; refreshWindowMs?: number; fetch?: typeof fetch };
  /** Connectors' OAuth clients by provider slug. Default `SERVICE_OAUTH_CLIENTS`, else none. */
  oauthClients?: Record<string, OAuthClientInput>;
  /**
   * Runs deployments. Default outside production: the local deployer (supervised child processes on
   * this machine; not a sandbox). In production there is none (deploys answer 503) unless one is
   * given here or `SERVICE_LOCAL_DEPLOYER=1` enables the local one. `false`: none.
   */
  deployer?: Deployer | false;
  /**
   * Where `/api/pricing/models` reads the LLM gateway's model catalog (an OpenAI-compatible
   * listing with prices). Default `SERVICE_MODELS_URL`, else `{upstream}/v1/models` of the LLM
   * gateway integration's provider. `gatewayName` is what a 502 calls it (default: its host);
   * the listing is refused past `timeoutMs` (default 10 s) or `maxBytes` (default 8 MiB).
   */
  pricing?: { modelsUrl?: string; gatewayName?: string; timeoutMs?: number; maxBytes?: number };
  /**
   * Tools whose slug starts with this are test tools, hidden from everyone but platform admins.
   * Default `SERVICE_HIDDEN_TOOL_PREFIX`, else `service-test-`.
   */
  hiddenToolPrefix?: string;
}

export interface PlatformCloseOptions {
  /**
   * How long calls in flight may take to finish and settlements to reach the store, in ms.
   * Default 10 s. What is still unsettled then stays in the journal for the next boot.
   */
  graceMs?: number;
  /**
   * Called when the grace is over and metered calls are still streaming: cut their connections
   * (`server.closeAllConnections()`), so each ends and is billed before the journal closes.
   */
  cutConnections?: () => void;
}

/** After connections are cut, how long the calls they carried get to record their bills. */
const CUT_CALLS_RECORD_MS = 2000;

/**
 * Least time a stop gives what is left after the metered calls (notices, leases, the instance
 * row) when the grace is spent: a store that hangs is not waited for longer.
 */
const STOP_THE_REST_MS = 2000;

export interface Platform {
  /** The web-standard handler. `env` may carry `{ remoteAddress }` of the connection. */
  fetch(request: Request, env?: unknown): Promise<Response>;
  /**
   * The platform as a `node:http` request listener, the way to serve it on Node: provider proxy
   * calls are answered straight on the Node request and response (no `Request`/`Response` per
   * call), everything else by the same app as `fetch`.
   *
   * @example createServer(platform.nodeListener).listen(8787);
   */
  nodeListener(req: IncomingMessage, res: ServerResponse): void;
  /** The services the routes are built on. */
  readonly context: PlatformContext;
  /** The store the platform runs on (as given in the options; its owner closes it). */
  readonly store: Store;
  /** The built-in development identity provider, when it runs. */
  readonly devIdp: DevIdentityProvider | null;
  /**
   * The node-level `upgrade` handler of the app proxy (WebSocket to deployed apps): attach it with
   * `server.on('upgrade', platform.handleUpgrade)`.
   */
  readonly handleUpgrade: UpgradeHandler;
  /**
   * Stops the platform for a shutdown: ends event streams (clients reconnect elsewhere), refuses
   * new metered calls (503 with `Retry-After`), waits for those in flight, settles every answered
   * call, gives leased credit back, and stops listening. The store stays open (its owner closes
   * it); an unreachable store does not make it fail (what is unsettled stays in the journal).
   * Stop accepting connections first.
   */
  close(options?: PlatformCloseOptions): Promise<void>;
}

/**
 * The tenant HTTP API as one fetch handler.
 *
 * @example
 * const store = await createStore();
 * const platform = await createPlatform({ store });
 * createServer(platform.nodeListener).listen(8787);
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
  const envOAuthClients = options.oauthClients
    ? new Map(Object.entries(options.oauthClients))
    : oauthClientsFromEnv((options.env ?? process.env).SERVICE_OAUTH_CLIENTS);
  const marginPercent = options.marginPercent ?? env.marginPercent ?? DEFAULT_MARGIN_PERCENT;
  const devIdp = idpUrl || options.identity ? null : await createDevIdentityProvider(db, { baseUrl });
  // Tokens must name their issuer and audience, so a token the IdP signed for another service
  // (another audience) or another IdP sharing a key is refused.
  const identity =
    options.identity ??
    (idpUrl
      ? createIdentityVerifier({
          jwks: jwksUrlOf(idpUrl),
          ...identityTokenChecks(idpUrl, {
            issuer: options.idpIssuer ?? env.idpIssuer,
            audience: options.idpAudience ?? env.idpAudience,
          }),
        })
      : // The development IdP's key is its own (kept in the store), so the issuer adds nothing; and
        // instances on one database with different base URLs must accept each other's tokens.
        createIdentityVerifier({ jwks: () => devIdp!.jwks(), audience: DEV_TOKEN_AUDIENCE }));

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
  const journal = options.journalDir
    ? await openSettlementJournal(options.journalDir, {
        onUnreadable: (file, line) => logger.warn('settlement journal line unreadable', { file, line }),
        onSegmentLost: (file) =>
          logger.warn('settlement journal segment deleted while in use; writing to a fresh one', { file }),
        // Its segments are named after this instance, and taken over by others once it stops beating.
        instanceId: instance.id,
        heartbeat: instance,
      })
    : null;
  const metering = createMeteringEngine(db, {
    instance,
    onSettled: (tenants) => {
      for (const tenant of tenants) balances.invalidate(tenant);
    },
    journal,
    logger,
  });
  balances = new BalanceReader(db, {
    ...(options.balanceCacheTtlMs !== undefined ? { ttlMs: options.balanceCacheTtlMs } : {}),
    before: (tenantId) => metering.pendingFor(tenantId),
  });
  const stopFollowingBalances = await balances.follow(options.store);
  await metering.follow(options.store);
  const keys = new KeyStore(
    db,
    options.keyCacheTtlMs !== undefined ? { cacheTtlMs: options.keyCacheTtlMs } : {},
  );
  const events = await EventStreamHub.start(options.store, {
    logger,
    keyLive: (keyId) => keys.isLive(keyId),
    ...options.eventStreams,
    instanceId: instance.id,
  });
  // Keys revoked or rotated on any instance leave this one's cache as the notice arrives, and
  // the event streams opened with a key that no longer works end.
  keys.onForget((keyIds) => events.recheckKeys(keyIds));
  const stopFollowingKeys = await keys.follow(options.store);
  // Suspensions on any instance reach this one's metered calls as the notice arrives.
  const tenantStatuses = new TenantStatuses(
    db,
    options.keyCacheTtlMs !== undefined ? { cacheTtlMs: options.keyCacheTtlMs } : {},
  );
  const stopFollowingTenantStatuses = await tenantStatuses.follow(options.store);
  const limiter = new RateLimiter(createRateLimitCounter(db));
  const rateLimits = { ...DEFAULT_RATE_LIMITS, ...options.rateLimits };
  const credentialThrottle = new FailedCredentialThrottle(limiter, rateLimits.failedCredentials);
  const trustedProxies = options.trustedProxies ?? env.trustedProxies ?? 0;
  // The development processor credits without charging anyone: never in production.
  const devPayments = production
    ? null
    : new DevPaymentProcessor(db, (id) => `${baseUrl}/billing/purchases/${id}`);
  const devMailbox = options.mailer || production ? null : new DevMailbox();
  const stripeSettings = options.stripe ?? env.stripe;
  const stripe = stripeSettings ? new StripePaymentProcessor(db, stripeSettings) : null;
  const stopFollowingAutoReloads = stripe
    ? await stripe.followAutoReloads(options.store, logger, `${baseUrl}/billing`)
    : null;
  const oauthClients = new OAuthClients(db, sealer, envOAuthClients);
  const providerFetch = options.connectorOAuth?.fetch ?? fetch;
  const refresher = new TokenRefresher({
    db,
    sealer,
    clients: oauthClients,
    fetch: providerFetch,
    logger,
    ...(options.connectorOAuth?.refreshWindowMs !== undefined
      ? { windowMs: options.connectorOAuth.refreshWindowMs }
      : {}),
  });
  const refreshEveryMs = options.connectorOAuth?.refreshEveryMs ?? 60_000;
  const stopRefreshing = refreshEveryMs > 0 ? refresher.start(refreshEveryMs) : null;
  const deployer =
    options.deployer === false
      ? null
      : (options.deployer ??
        (!production || (options.env ?? process.env).SERVICE_LOCAL_DEPLOYER === '1'
          ? new LocalDeployer()
          : null));
  const now = options.now ?? Date.now;
  const modelsUrl = options.pricing?.modelsUrl ?? (options.env ?? process.env).SERVICE_MODELS_URL;
  if (modelsUrl !== undefined && !URL.canParse(modelsUrl)) {
    throw new ConfigError(`SERVICE_MODELS_URL is not a URL: ${modelsUrl}`);
  }
  const connectorOAuth = new ConnectorOAuth({
    db,
    sealer,
    keys,
    clients: oauthClients,
    baseUrl,
    fetch: providerFetch,
  });
  const tools = new ToolCatalog(db, {
    baseUrl,
    now,
    hiddenPrefix:
      options.hiddenToolPrefix ?? ((options.env ?? process.env).SERVICE_HIDDEN_TOOL_PREFIX || undefined),
  });
  // Tools changed on any instance leave this one's catalog caches as the notice arrives.
  const stopFollowingTools = await tools.follow(options.store);
  const context: PlatformContext = {
    keys,
    balances,
    identity,
    sessions: new SessionStore(db),
    accounts: new Accounts(db),
    cliKeys: new CliKeys(db, keys),
    tenantKeys: new TenantKeys(db, keys),
    sshSessions: new SshSessionStore(db),
    connections: new TenantConnections({ db, sealer, keys }, refresher),
    connectorOAuth,
    endUserConnections: new EndUserConnections(db, connectorOAuth, oauthClients, baseUrl),
    oauthClients,
    billing: new BillingReports(db),
    idempotency: new IdempotencyRecords(db),
    limiter,
    credentialThrottle,
    logger,
    cors: { ownDomain: ownDomainOf(baseUrl, options.corsDomain ?? env.corsDomain) },
    rateLimits,
    sealer,
    metering,
    providers: new ProviderCatalog(db, sealer, marginPercent),
    connectionResolver: new ConnectionResolver(db, undefined, now),
    events,
    marginPercent,
    baseUrl,
    topUpUrl: options.topUpUrl ?? `${baseUrl}/billing`,
    trustedProxies,
    secureCookies: secureCookiesFor(baseUrl),
    tenantStatuses,
    operators: new Operators(db, tenantStatuses),
    adminEmails: new Set((options.adminEmails ?? env.adminEmails ?? []).map((email) => email.toLowerCase())),
    // Stripe, when configured, takes the purchases; the dev pages stay for purchases made before.
    payments: stripe ?? devPayments,
    devPayments,
    workspaces: new Workspaces(db),
    members: new Members(db, keys),
    invitations: new Invitations(db),
    mailer: options.mailer ?? devMailbox,
    stripe,
    deployments: new Deployments({
      db,
      sealer,
      keys,
      connections: new TenantConnections({ db, sealer, keys }),
      balances,
      deployer,
      baseUrl,
      logger,
    }),
    integrations: new Integrations(db, baseUrl, now),
    pricing: new PublicPricing(db, {
      ...options.pricing,
      ...(modelsUrl ? { modelsUrl } : {}),
      marginPercent,
      now,
      ...(options.upstreamFetch ? { fetch: options.upstreamFetch } : {}),
    }),
    now,
    tools,
  };
  // A catalog write on any instance drops this one's catalog caches as its notice arrives.
  const stopFollowingCatalog = await followCatalogChanges(options.store, (part) => {
    if (part === 'integrations') context.integrations.forget();
    if (part === 'pricing') context.pricing.forget();
  });
  // Deployments restart on the events their manifest's `restart_on` names, wherever they happen.
  const stopFollowingRestartEvents = await context.deployments.followRestartEvents(options.store);
  // Deployments that should run start again (in the background: a slow one must not hold the boot).
  const resumed = context.deployments
    .resume()
    .catch((error: unknown) => logger.warn('deployments not resumed', describeError(error)));

  const upstream = options.upstreamFetch ? fetchUpstream(options.upstreamFetch) : pooledUpstream();
  const proxyCore = createProxyCore({
    keys: context.keys,
    providers: context.providers,
    connections: context.connectionResolver,
    metering: context.metering,
    tenantStatuses,
    logger,
    baseUrl,
    credentials: { throttle: credentialThrottle, trustedProxies },
    upstream,
  });

  const app = new Hono<PlatformEnv>();
  const dashboardStopping = new AbortController();
  const strictTransport = production && baseUrl.startsWith('https://') ? 'max-age=31536000' : null;
  app.use(async (c, next) => {
    const started = performance.now();
    const requestId = requestIdFor(c.req.raw);
    c.set('requestId', requestId);
    c.set('errorShape', 'flat');
    await next();
    if (!c.get('requestIdSent')) setResponseHeader(c, 'x-request-id', requestId);
    // Every answer of the platform's own is read as the type it says (JSON too, not only pages);
    // a deployed app's (`/apps/...`) and a provider's (`/proxy/...`) keep the headers they sent.
    // In production on HTTPS, browsers are told to keep to HTTPS.
    if (!PASSED_THROUGH.test(c.req.path) && !c.res.headers.has('x-content-type-options')) {
      setResponseHeader(c, 'x-content-type-options', 'nosniff');
    }
    if (strictTransport) setResponseHeader(c, 'strict-transport-security', strictTransport);
    // A body refused past its limit was not read to its end, and the rest cannot be told from a
    // next request: the connection ends with this answer, and the client opens a new one.
    if (c.res.status === 413) setResponseHeader(c, 'connection', 'close');
    context.logger.info('request', {
      request_id: requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
    });
  });

  const refusalPage = dashboardRefusalPage(context);
  app.use(
    guardUrl((c, problem) =>
      refusalPage(c, { status: 400, title: 'Bad address', text: `This address cannot be read: ${problem}.` }),
    ),
  );

  // 503 with `Retry-After` while the database cannot be reached: a load balancer sends traffic
  // elsewhere, and the instance itself carries on and recovers when the database is back.
  app.get('/healthz', async (c) => {
    const ok = await options.store.ping();
    if (ok) return c.json({ ok }, 200, { 'cache-control': 'no-store' });
    return c.json({ ok, store: 'unreachable' }, 503, {
      'cache-control': 'no-store',
      'retry-after': String(STORE_RETRY_AFTER_SECONDS),
    });
  });
  app.route('/', balanceRoutes(context));
  app.route('/', runtimeRoutes(context));
  app.route('/', connectionRoutes(context));
  app.route('/', deployRoutes(context));
  app.route('/', appRoutes(context));
  app.route('/', appProxyRoutes(context, { devSignIn: devIdp !== null }));
  app.route('/', keyRoutes(context));
  app.route('/', spendRoutes(context));
  app.route('/', usageRoutes(context));
  app.route('/', integrationRoutes(context));
  app.route('/', pricingRoutes(context));
  app.route('/', catalogAssetRoutes(context));
  app.route('/', adminRoutes(context));
  app.route('/', adminOAuthRoutes(context));
  app.route('/', oauthRoutes(context));
  app.route('/', adminToolRoutes(context));
  app.route('/', toolRoutes(context));
  app.route('/', billingRoutes(context));
  app.route('/', billingPageRoutes(context, { devSignIn: devIdp !== null }));
  app.route('/', workspaceRoutes(context));
  app.route('/', memberRoutes(context));
  app.route('/', invitationPageRoutes(context, { devSignIn: devIdp !== null }));
  if (devMailbox) app.route('/', devMailboxRoutes(devMailbox));
  app.route(
    '/',
    dashboardRoutes(context, {
      fetchPlatform: (request, env) => app.fetch(request, env),
      devSignIn: devIdp !== null,
      pages: DASHBOARD_PAGES,
      stopping: dashboardStopping.signal,
      ...options.dashboard,
    }),
  );
  app.route('/', createProviderProxy(proxyCore));
  app.route('/', authRoutes(context));
  app.route('/', cliRoutes(context, { env: options.env ?? process.env, devSignIn: devIdp !== null }));
  if (devIdp) app.route('/auth/v1', devIdp.routes());

  // A browser's page request gets a page with the navigation; API calls keep the JSON answer.
  // A path that exists, asked with a method none of its routes takes, answers 405 with `Allow`
  // (`DELETE /api/billing/balance`). OPTIONS stays a 404 where no route answers it: only the
  // paths with a CORS preflight take it. A route's own 404 (`c.notFound()`) stays a 404.
  const methodsOf = allowedMethods(app);
  app.notFound((c) => {
    const method = c.req.method;
    const allowed = method === 'OPTIONS' ? [] : methodsOf(c.req.path);
    const refused = allowed.length > 0 && !allowed.includes(method);
    const page = isPageRequest(c);
    if (refused) {
      if (!page) return methodNotAllowed(method, allowed);
      const text = 'This page does not take that kind of request.';
      return refusalPage(c, { status: 405, title: 'Method not allowed', text, allow: allowed });
    }
    if (method !== 'GET' || !page) return flatError(404, 'Not found');
    return refusalPage(c, { status: 404, title: 'Not found', text: 'There is no page at this address.' });
  });
  // The one place refusals become answers: helpers and handlers throw, this answers.
  app.onError((error, c) => errorAnswer(error, c.get('errorShape'), c.get('requestId'), c.req.path));
  function errorAnswer(
    error: unknown,
    shape: ErrorShape,
    requestId: string | undefined,
    path: string,
  ): Response {
    const refusal = refusalOf(error);
    if (refusal) return refusalResponse(refusal, shape);
    if (isStoreUnavailable(error)) {
      // One line per refused request, without a stack: an outage is not a bug, and is loud enough.
      context.logger.warn('store unavailable', {
        request_id: requestId,
        path,
        error_message: error instanceof Error ? error.message : String(error),
      });
      return unavailableResponse(shape, { 'x-request-id': requestId ?? '' });
    }
    context.logger.error('unhandled error', { request_id: requestId, path, ...describeError(error) });
    return faultResponse(shape, { 'x-request-id': requestId ?? '' });
  }

  const proxyListener = createProxyListener({
    core: proxyCore,
    logger,
    answerError: (error, requestId) => errorAnswer(error, 'canonical', requestId, PROXY_PREFIX),
    strictTransport,
  });
  const appListener = getRequestListener((request, connection) => app.fetch(request, connection));

  let closing: Promise<void> | undefined;
  async function stop(closeOptions: PlatformCloseOptions): Promise<void> {
    const deadline = Date.now() + (closeOptions.graceMs ?? 10_000);
    // Each step runs whatever became of the one before: a store that is away must not stop
    // the rest (what is unsettled stays in the journal; leases and rows lapse on their own).
    const logged = (what: string) => (error: unknown) =>
      logger.warn(`stopping: ${what}`, describeError(error));
    /**
     * Until when a step that needs the store is waited for. A store that hangs answers none of
     * them, and each would wait for its statement's bound: past this, a step is left behind (what
     * it would have written lapses, or stays in the journal) so that the process can exit.
     */
    let cutoff = deadline;
    const storeStep = async (
      what: string,
      step: (() => Promise<unknown>) | null | undefined,
    ): Promise<void> => {
      if (!step) return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const overdue = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), Math.max(0, cutoff - Date.now()));
      });
      try {
        const late = await Promise.race([step().then(() => false, logged(what)), overdue]);
        if (late) logger.warn(`stopping: ${what}`, { error_message: 'the store did not answer in time' });
      } finally {
        clearTimeout(timer);
      }
    };
    dashboardStopping.abort();
    await storeStep('event streams not closed cleanly', () => events.close());
    await storeStep('oauth refreshes not stopped cleanly', stopRefreshing);
    let left = await metering.drain(deadline);
    if (left.inFlight > 0 && closeOptions.cutConnections) {
      closeOptions.cutConnections();
      left = await metering.drain(Date.now() + CUT_CALLS_RECORD_MS);
    }
    if (left.inFlight > 0 || left.unsettled > 0) {
      logger.warn('stopped with metered calls unsettled', {
        in_flight: left.inFlight,
        unsettled: left.unsettled,
        journal: journal?.dir ?? null,
      });
    }
    // What is left (notices unfollowed, leases given back, the instance row removed) takes
    // milliseconds of a store that answers; it gets what remains of the grace, and at least this.
    cutoff = Math.max(deadline, Date.now() + STOP_THE_REST_MS);
    await storeStep('balance notices not unfollowed', stopFollowingBalances);
    await storeStep('key notices not unfollowed', stopFollowingKeys);
    await storeStep('tenant status notices not unfollowed', stopFollowingTenantStatuses);
    await storeStep('auto-reload notices not unfollowed', stopFollowingAutoReloads);
    await storeStep('catalog notices not unfollowed', stopFollowingCatalog);
    await storeStep('deployment event notices not unfollowed', stopFollowingRestartEvents);
    await storeStep('tool catalog notices not unfollowed', stopFollowingTools);
    await storeStep('metering not closed cleanly', () => metering.close());
    // Idle upstream connections close now, any still answering once done.
    upstream.close();
    await resumed;
    await deployer?.close().catch(logged('deployments not stopped cleanly'));
    await storeStep('instance row not removed', () => instance.stop());
  }

  return {
    fetch: async (request, connection) => app.fetch(request, connection),
    nodeListener: (req, res) => {
      if (isPlainProxyUrl(req.url ?? '')) void proxyListener(req, res);
      else void appListener(req, res);
    },
    context,
    store: options.store,
    devIdp,
    handleUpgrade: createUpgradeHandler(context),
    // A second close (two signals, a test's teardown) waits for the first.
    close: (closeOptions = {}) => {
      closing ??= stop(closeOptions);
      return closing;
    },
  };
}

/**
 * Sets a header on the finished response in place. `c.header()` after the handler would rebuild
 * the response, which costs the Node adapter its fast path (a quarter of the throughput of a
 * small JSON answer); a response with immutable headers (one piped from `fetch`) is rebuilt.
 */
/** Paths whose answers are another party's (a deployed app, a provider), passed through as sent. */
const PASSED_THROUGH = /^\/(?:apps|proxy)\//;

function setResponseHeader(c: Context, name: string, value: string): void {
  try {
    c.res.headers.set(name, value);
  } catch {
    c.header(name, value);
  }
}
