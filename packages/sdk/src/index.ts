/**
 * `@service/sdk`: the platform client for deployed tools and host backends. Fetch-based with no
 * Node-only imports, so it runs in Node 20+, browsers and edge runtimes.
 *
 * @see docs/sdk.md
 */
// The server's wire types, as types only: the SDK checks responses by hand (./shapes.ts), so no
// schema library is bundled.
export type {
  BillingBalance,
  ConnectionCredential,
  ConnectionStatus,
  RuntimeConnection,
  ServiceErrorCode,
  ServiceEvent,
  ServiceEventKind,
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
export type { ReconnectOptions, StreamRetry, SubscribeOptions } from './events.js';
export { LEGACY_EVENT_ALIASES, SERVICE_ERROR_CODES, SERVICE_EVENT_KINDS } from './shapes.js';
export type { RequestOptions } from './transport.js';
