/**
 * Every answer the proxy gives instead of the upstream's, in the canonical error shape: 401 no or
 * bad key, 429 too many bad keys from one address, 403 tenant suspended, 404 unknown provider,
 * 403 no connection, 400 no price, 402 out of credit or over a spend cap, 413 body too large, 415
 * a body that cannot be read to be metered, 502
 * upstream unreachable, 503 instance stopping.
 *
 * @see docs/proxy.md "Errors"
 */
import { canonicalError } from '../http/errors.js';
import type { SpendPeriod } from '../store/database.js';

export function missingKey(): Response {
  return canonicalError(
    401,
    'unauthorized',
    'Missing or invalid API key: send a service_sk_ key as a Bearer token',
  );
}

export function invalidKey(): Response {
  return canonicalError(401, 'unauthorized', 'Invalid or revoked API key');
}

/** The caller's address sent too many keys that failed; every key from it waits. */
export function tooManyFailedKeys(retryAfter: number): Response {
  return canonicalError(
    429,
    'rate_limited',
    'Too many failed API keys from this address; retry later',
    { retry_after: retryAfter },
    { 'retry-after': String(retryAfter) },
  );
}

/** An operator suspended the workspace: its keys stay, but nothing is metered until it resumes. */
export function tenantSuspended(): Response {
  return canonicalError(
    403,
    'tenant_suspended',
    'This workspace is suspended; contact the platform operator',
    {
      suggested_fix: 'Ask the platform operator to resume the workspace',
    },
  );
}

export function unknownProvider(slug: string): Response {
  return canonicalError(404, 'not_found', `Unknown provider: ${slug}`, { slug });
}

export function notConnected(slug: string, baseUrl: string): Response {
  return canonicalError(403, 'not_connected', `This key has no connection to ${slug}`, {
    slug,
    connect_url: `${baseUrl}/integrations/${encodeURIComponent(slug)}`,
    suggested_fix: `Connect ${slug} and bind the connection to this app`,
  });
}

/** A token-metered call's body that cannot be read to meter it (compressed, or not UTF-8). */
export function unreadableBody(problem: string): Response {
  return canonicalError(415, 'unsupported_media_type', `${problem} to be metered`, {
    suggested_fix: 'Send the JSON body as UTF-8, uncompressed',
  });
}

export function invalidModel(problem: string): Response {
  return canonicalError(400, 'validation_failed', `model ${problem}`);
}

export function noPrice(slug: string, model: string | null): Response {
  return canonicalError(
    400,
    'validation_failed',
    model ? `No price for model ${model} on ${slug}` : `No price for calls to ${slug}`,
    { slug },
  );
}

export function balanceExhausted(slug: string): Response {
  return canonicalError(402, 'balance_exhausted', 'Out of credit: add credit to make metered calls', {
    slug,
    suggested_fix: 'Top up the workspace balance',
  });
}

export function spendCapReached(slug: string, window: SpendPeriod, resetsAt: Date): Response {
  return canonicalError(
    402,
    'spend_cap_exceeded',
    `The app's ${window} spend cap is reached; calls resume when the window resets`,
    {
      slug,
      window,
      resets_at: resetsAt.toISOString(),
      retry_after: Math.max(1, Math.ceil((resetsAt.getTime() - Date.now()) / 1000)),
    },
  );
}

/** This instance is stopping (a deploy): the same call succeeds at another instance at once. */
export function instanceStopping(): Response {
  return canonicalError(
    503,
    'service_unavailable',
    'This instance is stopping: retry the call',
    { retry_after: 1 },
    { 'retry-after': '1' },
  );
}

export function tooLarge(maxBytes: number): Response {
  return canonicalError(413, 'payload_too_large', `Request body is larger than ${maxBytes} bytes`);
}

/** The caller's upload ended early (it went away): a 400 for the log, which no one is left to read. */
export function bodyCutShort(): Response {
  return canonicalError(400, 'validation_failed', 'The request body ended before it was complete');
}

/** The methods the proxy forwards. */
export const FORWARDED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** A method the proxy does not forward (`TRACE`, `CONNECT`, and the like). */
export function methodNotForwarded(method: string): Response {
  return canonicalError(
    405,
    'method_not_allowed',
    `The proxy does not forward ${method} requests`,
    undefined,
    {
      allow: FORWARDED_METHODS.join(', '),
    },
  );
}

export function upstreamUnreachable(slug: string): Response {
  return canonicalError(502, 'upstream_error', `Could not reach ${slug}`, { slug });
}
