import type { BalanceReader } from '../billing/balances.js';
import type { MeteringEngine } from '../billing/metering.js';
import type { Operators } from '../billing/operators.js';
import type { DevPaymentProcessor } from '../billing/payments/dev-processor.js';
import type { PaymentProcessor } from '../billing/payments/processor.js';
import type { StripePaymentProcessor } from '../billing/payments/stripe-processor.js';
import type { BillingReports } from '../billing/reports.js';
import type { Integrations } from '../catalog/integrations.js';
import type { PublicPricing } from '../catalog/pricing.js';
import type { ToolCatalog } from '../catalog/tools.js';
import type { ConnectorOAuth } from '../connections/connector-oauth.js';
import type { EndUserConnections } from '../connections/end-user-connections.js';
import type { OAuthClients } from '../connections/oauth-clients.js';
import type { TenantConnections } from '../connections/tenant-connections.js';
import type { Deployments } from '../deploy/deployments.js';
import type { EventStreamHub } from '../events/streams.js';
import type { CorsPolicy } from '../http/cors.js';
import { FAILED_CREDENTIALS_RULE, type FailedCredentialThrottle } from '../http/credential-throttle.js';
import type { Logger } from '../http/logger.js';
import type { RateLimiter, RateLimitRule } from '../http/rate-limit.js';
import type { Accounts } from '../identity/accounts.js';
import type { CliKeys } from '../identity/cli-keys.js';
import type { Invitations } from '../identity/invitations.js';
import type { IdentityVerifier } from '../identity/jwt.js';
import type { KeyStore } from '../identity/key-store.js';
import type { Members } from '../identity/members.js';
import type { SessionStore } from '../identity/sessions.js';
import type { SshSessionStore } from '../identity/ssh-sessions.js';
import type { TenantKeys } from '../identity/tenant-keys.js';
import type { TenantStatuses } from '../identity/tenant-status.js';
import type { Workspaces } from '../identity/workspaces.js';
import type { ConnectionResolver } from '../proxy/access.js';
import type { ProviderCatalog } from '../proxy/providers.js';
import type { IdempotencyRecords } from '../store/idempotency.js';
import type { Sealer } from '../store/sealing.js';
import type { ErrorShape } from './errors.js';
import type { Mailer } from './mailer.js';

/** Named rate-limit rules of the platform API. */
export interface PlatformRateLimits {
  /** `GET /api/billing/balance`: 60 per minute per IP. */
  billingBalance: RateLimitRule;
  /** `GET /api/v1/balance`: 60 per minute per IP. */
  v1Balance: RateLimitRule;
  /** `GET /api/cli/balance`: 30 per minute per IP. */
  cliBalance: RateLimitRule;
  /** Failed credentials on the proxy, runtime, balance, connections and CLI routes: 30 per minute per IP. */
  failedCredentials: RateLimitRule;
  /** `POST /api/tenants/me/invitations`: 30 per 10 minutes per workspace (each one sends mail). */
  invitations: RateLimitRule;
  /** `POST /api/deploy`: 5 per hour per IP. */
  deploy: RateLimitRule;
  /** `POST /api/integrations/{slug}` and `.../regenerate`, together: 30 per minute per user. */
  integrations: RateLimitRule;
}

export const DEFAULT_RATE_LIMITS: PlatformRateLimits = {
  billingBalance: { limit: 60, windowMs: 60_000 },
  v1Balance: { limit: 60, windowMs: 60_000 },
  cliBalance: { limit: 30, windowMs: 60_000 },
  failedCredentials: FAILED_CREDENTIALS_RULE,
  invitations: { limit: 30, windowMs: 10 * 60_000 },
  deploy: { limit: 5, windowMs: 60 * 60_000 },
  integrations: { limit: 30, windowMs: 60_000 },
};

/**
 * Everything a route module needs; built once per platform. Routes get domain services, never
 * the database: what they store or read goes through these.
 */
export interface PlatformContext {
  keys: KeyStore;
  balances: BalanceReader;
  identity: IdentityVerifier;
  sessions: SessionStore;
  accounts: Accounts;
  cliKeys: CliKeys;
  /** A workspace's App Keys and CLI keys (`/api/keys`). */
  tenantKeys: TenantKeys;
  sshSessions: SshSessionStore;
  connections: TenantConnections;
  /** Connecting connectors by OAuth (`/api/oauth/*`). */
  connectorOAuth: ConnectorOAuth;
  /** A host app's own users' connections (the wire's `cloud` source), through App Keys. */
  endUserConnections: EndUserConnections;
  /** Each connector's OAuth client (`/api/admin/integrations/{slug}/oauth`). */
  oauthClients: OAuthClients;
  billing: BillingReports;
  idempotency: IdempotencyRecords;
  limiter: RateLimiter;
  /** Counts failed credentials per address and refuses an address past the limit. */
  credentialThrottle: FailedCredentialThrottle;
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
  /** Whether a tenant is suspended (cached, followed across instances). */
  tenantStatuses: TenantStatuses;
  /** Operator actions on tenants (`/api/admin`). */
  operators: Operators;
  /** Lowercased emails of platform admins (`SERVICE_ADMIN_EMAILS`). */
  adminEmails: ReadonlySet<string>;
  /** Where `POST /api/billing/purchase` sends buyers; null when no processor is configured. */
  payments: PaymentProcessor | null;
  /** The development processor (its confirmation pages), when it runs: never in production. */
  devPayments: DevPaymentProcessor | null;
  /** A user's workspaces, the current one, and their account (`/api/tenants`, `/api/user/me`). */
  workspaces: Workspaces;
  /** The people of a workspace and their roles (`/api/tenants/me/members`). */
  members: Members;
  /** Invitations by email and their accept links. */
  invitations: Invitations;
  /** Sends invitations; null when none is configured (production without a `mailer`). */
  mailer: Mailer | null;
  /** The Stripe processor (its webhook, its customers), when configured. */
  stripe: StripePaymentProcessor | null;
  /** The catalog's integrations: public shape (cached), tenants' overlay and switches, the admins' switch. */
  integrations: Integrations;
  /** Public prices: the LLM gateway's model catalog (cached), the public allowlist and rate tables. */
  pricing: PublicPricing;
  /** Milliseconds since the epoch: the clock of the catalog's caches (injectable in tests). */
  now: () => number;
  /** Deployed apps: deploys, their run state, logs, secrets, and where the app proxy sends traffic. */
  deployments: Deployments;
  /** The platform's deployable tools and their releases (`/api/tools`, `/api/admin/tools`). */
  tools: ToolCatalog;
}

/** Hono environment of platform routes. */
export interface PlatformEnv {
  Variables: {
    requestId: string;
    /** Set when the route already put `X-Request-Id` on its response (see `fastJson`). */
    requestIdSent?: boolean;
    /** Which error body shape a refusal or an unexpected fault answers with on this route. */
    errorShape: ErrorShape;
  };
}
