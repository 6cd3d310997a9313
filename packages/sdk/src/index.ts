/**
 * `@service/sdk`: the platform client for deployed tools and host backends. Fetch-based with no
 * Node-only imports, so it runs in Node 20+, browsers and edge runtimes.
 *
 * @see docs/sdk.md
 */
export {
  type BillingBalance,
  billingBalanceSchema,
  type ConnectionCredential,
  type ConnectionStatus,
  LEGACY_EVENT_ALIASES,
  type RuntimeConnection,
  runtimeConnectionSchema,
  runtimeConnectionsSchema,
  SERVICE_ERROR_CODES,
  SERVICE_EVENT_KINDS,
  type ServiceErrorCode,
  type ServiceEvent,
  type ServiceEventKind,
  serviceEventSchema,
} from '@service/core/schemas';
export type { RetryOptions } from './backoff.js';
export {
  type ClientOptions,
  type ConnectionsApi,
  createClient,
  type EventsApi,
  type ProxyApi,
  type ServiceClient,
} from './client.js';
export {
  ServiceAuthError,
  ServiceBalanceExhaustedError,
  ServiceConfigError,
  ServiceConnectionError,
  ServiceError,
  type ServiceErrorDetails,
  ServiceNotConnectedError,
  ServiceRateLimitError,
  ServiceSpendCapError,
  ServiceUpstreamError,
  ServiceValidationError,
} from './errors.js';
export type { ReconnectOptions, SubscribeOptions } from './events.js';
export type { RequestOptions } from './transport.js';
