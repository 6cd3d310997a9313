/**
 * The response shapes the SDK relies on, checked by hand. The types are the server's own (from
 * `@service/core/schemas`, types only); the checks narrow just what the SDK reads, so browsers
 * and edge runtimes do not download a schema library (`shapes.test.ts` holds them to the
 * server's schemas).
 */
import type {
  BillingBalance,
  ConnectionStatus,
  RuntimeConnection,
  ServiceErrorCode,
  ServiceEvent,
  ServiceEventKind,
} from '@service/core/schemas';

/** Every canonical event kind, in the server's order. */
export const SERVICE_EVENT_KINDS: ServiceEventKind[] = [
  'connection.connected',
  'connection.disconnected',
  'connection.changed',
  'connection.status_changed',
  'billing.usage_recorded',
  'billing.balance_changed',
  'billing.cap_warned',
  'billing.cap_tripped',
];

/** Legacy SSE names, each sent as its own block right after its canonical event. */
export const LEGACY_EVENT_ALIASES: Partial<Record<ServiceEventKind, string>> = {
  'connection.connected': 'connection_created',
  'connection.disconnected': 'connection_deleted',
  'connection.changed': 'connection_updated',
  'connection.status_changed': 'connection_updated',
};

/** Canonical error codes with their HTTP status. */
export const SERVICE_ERROR_CODES: Record<ServiceErrorCode, number> = {
  unauthorized: 401,
  not_connected: 403,
  forbidden: 403,
  tenant_suspended: 403,
  balance_exhausted: 402,
  spend_cap_exceeded: 402,
  rate_limited: 429,
  rate_limit_sse_streams: 429,
  validation_failed: 400,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  upstream_error: 502,
  internal_error: 500,
  service_unavailable: 503,
};

const CONNECTION_STATUSES = new Set<string>([
  'connected',
  'needs_reauth',
  'revoked',
  'error',
] satisfies ConnectionStatus[]);

type Fields = Record<string, unknown>;

export const isRecord = (value: unknown): value is Fields =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const isString = (value: unknown): value is string => typeof value === 'string';
const isInteger = (value: unknown): value is number => Number.isSafeInteger(value);
const isWindow = (value: unknown) => value === 'daily' || value === 'monthly';

/** `GET /api/billing/balance` 200 body. */
export function isBillingBalance(value: unknown): value is BillingBalance {
  return (
    isRecord(value) &&
    isInteger(value.credits_remaining_micros) &&
    value.credits_remaining_micros >= 0 &&
    value.currency === 'USD' &&
    isString(value.top_up_url)
  );
}

/** One connection of `GET /api/deployments/me/connections`: the fields callers branch on. */
function isRuntimeConnection(value: unknown): value is RuntimeConnection {
  return (
    isRecord(value) &&
    isString(value.id) &&
    isString(value.slug) &&
    isString(value.status) &&
    CONNECTION_STATUSES.has(value.status) &&
    (value.credential === null || (isRecord(value.credential) && isString(value.credential.type))) &&
    isRecord(value.env_bootstrap) &&
    Array.isArray(value.env_bootstrap.vars)
  );
}

/** `GET /api/deployments/me/connections` 200 body. */
export function isRuntimeConnections(value: unknown): value is { connections: RuntimeConnection[] } {
  return isRecord(value) && Array.isArray(value.connections) && value.connections.every(isRuntimeConnection);
}

const KIND_FIELDS: Record<ServiceEventKind, (event: Fields) => boolean> = {
  'connection.connected': (e) => isString(e.slug) && isString(e.connection_id),
  'connection.disconnected': (e) => isString(e.slug) && isString(e.connection_id),
  'connection.changed': (e) => isString(e.slug) && isString(e.connection_id),
  'connection.status_changed': (e) =>
    isString(e.slug) && isString(e.connection_id) && isString(e.status) && CONNECTION_STATUSES.has(e.status),
  'billing.usage_recorded': (e) => isString(e.provider) && isInteger(e.micros),
  'billing.balance_changed': (e) => isInteger(e.remaining_micros),
  'billing.cap_warned': (e) => isWindow(e.window) && typeof e.pct === 'number',
  'billing.cap_tripped': (e) => isWindow(e.window),
};

/** A canonical event payload, or false for anything else (an unknown kind, a missing field). */
export function isServiceEvent(value: unknown): value is ServiceEvent {
  if (!isRecord(value) || !isString(value.id) || !isString(value.at) || !isString(value.kind)) return false;
  const fields = KIND_FIELDS[value.kind as ServiceEventKind] as ((event: Fields) => boolean) | undefined;
  return fields !== undefined && Object.hasOwn(KIND_FIELDS, value.kind) && fields(value);
}
