import { type Context, Hono } from 'hono';
import { BalanceReader } from '../billing/balances.js';
import { ownDomainOf } from '../http/cors.js';
import { canonicalError, flatError, nestedError } from '../http/errors.js';
import { createJsonLogger, describeError, type Logger } from '../http/logger.js';
import { RateLimiter } from '../http/rate-limit.js';
import { requestIdFor } from '../http/request-id.js';
import { createDevIdentityProvider, type DevIdentityProvider } from '../identity/dev-idp.js';
import { createIdentityVerifier, type IdentityVerifier, jwksUrlOf } from '../identity/jwt.js';
import { KeyStore } from '../identity/key-store.js';
import { SessionStore } from '../identity/sessions.js';
import type { Store } from '../store/index.js';
import { ConfigError, readPlatformEnv } from './config.js';
import {
  DEFAULT_RATE_LIMITS,
  type PlatformContext,
  type PlatformEnv,
  type PlatformRateLimits,
} from './context.js';
import { authRoutes } from './routes/auth.js';
import { balanceRoutes } from './routes/balance.js';

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
  /** Environment to read settings from. Default `process.env`. */
  env?: Record<string, string | undefined>;
}

export interface Platform {
  /** The web-standard handler. `env` may carry `{ remoteAddress }` of the connection. */
  fetch(request: Request, env?: unknown): Promise<Response>;
  readonly context: PlatformContext;
  /** The built-in development identity provider, when it runs. */
  readonly devIdp: DevIdentityProvider | null;
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
  const devIdp = idpUrl || options.identity ? null : await createDevIdentityProvider(db, { baseUrl });
  const identity =
    options.identity ?? createIdentityVerifier({ jwks: idpUrl ? jwksUrlOf(idpUrl) : () => devIdp!.jwks() });

  const context: PlatformContext = {
    store: options.store,
    db,
    keys: new KeyStore(db, options.keyCacheTtlMs !== undefined ? { cacheTtlMs: options.keyCacheTtlMs } : {}),
    balances: new BalanceReader(
      db,
      options.balanceCacheTtlMs !== undefined ? { ttlMs: options.balanceCacheTtlMs } : {},
    ),
    identity,
    sessions: new SessionStore(db),
    limiter: new RateLimiter(db),
    logger: options.logger ?? createJsonLogger(),
    cors: { ownDomain: ownDomainOf(baseUrl, options.corsDomain ?? env.corsDomain) },
    rateLimits: { ...DEFAULT_RATE_LIMITS, ...options.rateLimits },
    baseUrl,
    topUpUrl: options.topUpUrl ?? `${baseUrl}/billing`,
    trustedProxies: options.trustedProxies ?? env.trustedProxies ?? 0,
    secureCookies: !/^http:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/.test(baseUrl),
  };

  const app = new Hono<PlatformEnv>();
  app.use(async (c, next) => {
    const started = performance.now();
    const requestId = requestIdFor(c.req.raw);
    c.set('requestId', requestId);
    c.set('errorShape', 'flat');
    await next();
    setResponseHeader(c, 'x-request-id', requestId);
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
  app.route('/', authRoutes(context));
  if (devIdp) app.route('/auth/v1', devIdp.routes());

  app.notFound(() => flatError(404, 'Not found'));
  app.onError((error, c) => {
    const requestId = c.get('requestId');
    context.logger.error('unhandled error', {
      request_id: requestId,
      path: c.req.path,
      ...describeError(error),
    });
    const headers = { 'x-request-id': requestId ?? '' };
    switch (c.get('errorShape')) {
      case 'nested':
        return nestedError(500, 'Internal server error', headers);
      case 'canonical':
        return canonicalError(500, 'internal_error', 'Internal server error', {}, headers);
      default:
        return flatError(500, 'Internal server error', {}, headers);
    }
  });

  return {
    fetch: async (request, connection) => app.fetch(request, connection),
    context,
    devIdp,
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
