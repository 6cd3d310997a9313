import type { Kysely } from 'kysely';
import type { BalanceReader } from '../billing/balances.js';
import type { MeteringEngine } from '../billing/metering.js';
import type { EventStreamHub } from '../events/streams.js';
import type { CorsPolicy } from '../http/cors.js';
import type { Logger } from '../http/logger.js';
import type { RateLimiter, RateLimitRule } from '../http/rate-limit.js';
import type { IdentityVerifier } from '../identity/jwt.js';
import type { KeyStore } from '../identity/key-store.js';
import type { SessionStore } from '../identity/sessions.js';
import type { ConnectionResolver } from '../proxy/access.js';
import type { ProviderCatalog } from '../proxy/providers.js';
import type { Database } from '../store/database.js';
import type { Store } from '../store/index.js';
import type { Sealer } from '../store/sealing.js';

/** Named rate-limit rules of the platform API. */
export interface PlatformRateLimits {
  /** `GET /api/billing/balance`: 60 per minute per IP. */
  billingBalance: RateLimitRule;
  /** `GET /api/v1/balance`: 60 per minute per IP. */
  v1Balance: RateLimitRule;
  /** `GET /api/cli/balance`: 30 per minute per IP. */
  cliBalance: RateLimitRule;
}

export const DEFAULT_RATE_LIMITS: PlatformRateLimits = {
  billingBalance: { limit: 60, windowMs: 60_000 },
  v1Balance: { limit: 60, windowMs: 60_000 },
  cliBalance: { limit: 30, windowMs: 60_000 },
};

/** Everything a route module needs; built once per platform. */
export interface PlatformContext {
  store: Store;
  db: Kysely<Database>;
  keys: KeyStore;
  balances: BalanceReader;
  identity: IdentityVerifier;
  sessions: SessionStore;
  limiter: RateLimiter;
  logger: Logger;
  cors: CorsPolicy;
  rateLimits: PlatformRateLimits;
  /** Seals and opens stored credentials; null without SERVICE_STORE_ENCRYPTION_KEY. */
  sealer: Sealer | null;
  metering: MeteringEngine;
  providers: ProviderCatalog;
  connectionResolver: ConnectionResolver;
  events: EventStreamHub;
  /** The default margin on metered prices, a decimal percent (`MARGIN_PERCENT`, default 20). */
  marginPercent: string;
  baseUrl: string;
  topUpUrl: string;
  trustedProxies: number;
  /** Cookies get `Secure` unless the base URL is plain-http localhost. */
  secureCookies: boolean;
}

/** Hono environment of platform routes. */
export interface PlatformEnv {
  Variables: {
    requestId: string;
    /** Set when the route already put `X-Request-Id` on its response (see `fastJson`). */
    requestIdSent?: boolean;
    /** Which error body shape an unexpected fault answers with on this route. */
    errorShape: 'canonical' | 'nested' | 'flat';
  };
}
