/**
 * Typed refusals of the platform API. Route helpers throw a `PlatformError` (or a domain error
 * with a status, such as `ConnectionError`); the platform's one `onError` answers it in the
 * route's error body shape, so handlers read as their business.
 */
import { OperatorError } from '../billing/operators.js';
import { PaymentError } from '../billing/payments/stripe-processor.js';
import { ConnectionError } from '../connections/errors.js';
import { ConnectorOAuthError } from '../connections/oauth-errors.js';
import { DeployError } from '../deploy/errors.js';
import type { ErrorShape } from '../http/errors.js';
import { canonicalError, flatError, nestedError, stringError } from '../http/errors.js';
import { KeyError } from '../identity/tenant-keys.js';
import { WorkspaceError } from '../identity/workspaces.js';
import { STORE_RETRY_AFTER_SECONDS } from '../store/availability.js';

export interface PlatformErrorOptions {
  /** The SCREAMING_SNAKE code of a flat body, or the code of a canonical one (default `error`). */
  code?: string;
  headers?: Record<string, string>;
  /** The body shape when it is not the route's own. */
  shape?: ErrorShape;
}

/** A refusal with its status and message, answered as is (never logged as a fault). */
export class PlatformError extends Error {
  override name = 'PlatformError';
  constructor(
    readonly status: number,
    message: string,
    readonly options: PlatformErrorOptions = {},
  ) {
    super(message);
  }
}

/** The refusal a thrown value stands for, domain errors translated; null for an unexpected fault. */
export function refusalOf(error: unknown): PlatformError | null {
  if (error instanceof PlatformError) return error;
  if (
    error instanceof ConnectionError ||
    error instanceof ConnectorOAuthError ||
    error instanceof KeyError ||
    error instanceof OperatorError ||
    error instanceof WorkspaceError ||
    error instanceof PaymentError ||
    error instanceof DeployError
  ) {
    return new PlatformError(error.status, error.message, { code: error.code });
  }
  return null;
}

/** The answer to a refusal, in its own shape or else the route's. */
export function refusalResponse(refusal: PlatformError, routeShape: ErrorShape): Response {
  const { code, headers = {}, shape = routeShape } = refusal.options;
  switch (shape) {
    case 'nested':
      return nestedError(refusal.status, refusal.message, headers);
    case 'canonical':
      return canonicalError(refusal.status, code ?? 'error', refusal.message, {}, headers);
    case 'string':
      return stringError(refusal.status, refusal.message, headers);
    default:
      return flatError(refusal.status, refusal.message, code ? { code } : {}, headers);
  }
}

/** The answer to an unexpected fault: a generic message in the route's shape (the log has the rest). */
export function faultResponse(routeShape: ErrorShape, headers: Record<string, string>): Response {
  switch (routeShape) {
    case 'nested':
      return nestedError(500, 'Internal server error', headers);
    case 'canonical':
      return canonicalError(500, 'internal_error', 'Internal server error', {}, headers);
    case 'string':
      return stringError(500, 'Internal error', headers);
    default:
      return flatError(500, 'Internal server error', {}, headers);
  }
}

export type { ErrorShape };

/**
 * The answer while the database cannot be reached: 503 with `Retry-After`, in the route's shape
 * (canonical `service_unavailable`, flat `SERVICE_UNAVAILABLE`). Not a fault of the request, and
 * over once the store is back.
 */
export function unavailableResponse(routeShape: ErrorShape, headers: Record<string, string>): Response {
  const message = 'The service is briefly unavailable; try again shortly.';
  const all = { ...headers, 'retry-after': String(STORE_RETRY_AFTER_SECONDS) };
  switch (routeShape) {
    case 'nested':
      return nestedError(503, message, all);
    case 'canonical':
      return canonicalError(
        503,
        'service_unavailable',
        message,
        { retry_after: STORE_RETRY_AFTER_SECONDS },
        all,
      );
    case 'string':
      return stringError(503, message, all);
    default:
      return flatError(503, message, { code: 'SERVICE_UNAVAILABLE' }, all);
  }
}
