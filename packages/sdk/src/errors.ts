import { isRecord as record, SERVICE_ERROR_CODES } from './shapes.js';

/** Fields of an error answer, from the canonical body and the response headers. */
export interface ServiceErrorDetails {
  status: number;
  code: string;
  message: string;
  /** Seconds to wait before trying again (`error.retry_after`, else the `Retry-After` header). */
  retryAfter?: number;
  /** Where the user connects the missing integration (`error.connect_url`). */
  connectUrl?: string;
  /** The integration concerned (`error.slug`). */
  slug?: string;
  /** What to do about it, in words (`error.suggested_fix`). */
  suggestedFix?: string;
  /** Spend caps: the window that tripped (`error.window`). */
  window?: 'daily' | 'monthly';
  /** Spend caps: when that window resets, ISO 8601 (`error.resets_at`). */
  resetsAt?: string;
  /** The platform's `X-Request-Id`, for support requests. */
  requestId?: string;
  /** The parsed response body, whatever its shape. */
  body?: unknown;
}

/**
 * Every error the platform answers with. `code` is the code the platform sent
 * (`Service-Error-Code`, else `error.code` of the body, else the flat body's `code`, such as
 * `BILLING_NOT_SETUP` or `SLUG_TAKEN`, kept as sent), else one derived from the status, so callers
 * can `switch` on it; `instanceof` a subclass picks a family.
 *
 * @example
 * try { await client.balance(); }
 * catch (error) { if (error instanceof ServiceRateLimitError) await wait(error.retryAfter); }
 */
export class ServiceError extends Error {
  override name = 'ServiceError';
  readonly status: number;
  readonly code: string;
  readonly retryAfter?: number;
  readonly connectUrl?: string;
  readonly slug?: string;
  readonly suggestedFix?: string;
  readonly window?: 'daily' | 'monthly';
  readonly resetsAt?: string;
  readonly requestId?: string;
  readonly body?: unknown;

  constructor(details: ServiceErrorDetails, options?: { cause?: unknown }) {
    super(details.message, options);
    this.status = details.status;
    this.code = details.code;
    for (const field of [
      'retryAfter',
      'connectUrl',
      'slug',
      'suggestedFix',
      'window',
      'resetsAt',
      'requestId',
      'body',
    ] as const) {
      if (details[field] !== undefined) Object.assign(this, { [field]: details[field] });
    }
  }
}

/** 401 (`unauthorized`) or 403 (`forbidden`): the credential is missing, unknown, revoked or not allowed here. */
export class ServiceAuthError extends ServiceError {
  override name = 'ServiceAuthError';
}
/** 403 `not_connected`: the app has no connection for the provider; send the user to `connectUrl`. */
export class ServiceNotConnectedError extends ServiceError {
  override name = 'ServiceNotConnectedError';
}
/** 402 `balance_exhausted`: the tenant is out of credit. */
export class ServiceBalanceExhaustedError extends ServiceError {
  override name = 'ServiceBalanceExhaustedError';
}
/** 402 `spend_cap_exceeded`: an app spend cap is used up until `resetsAt`. */
export class ServiceSpendCapError extends ServiceError {
  override name = 'ServiceSpendCapError';
}
/** 429 (`rate_limited`, `rate_limit_sse_streams`): wait `retryAfter` seconds. */
export class ServiceRateLimitError extends ServiceError {
  override name = 'ServiceRateLimitError';
}
/** 400 `validation_failed`: the request was malformed. */
export class ServiceValidationError extends ServiceError {
  override name = 'ServiceValidationError';
}
/** 502 `upstream_error`: the provider behind the proxy failed or could not be reached. */
export class ServiceUpstreamError extends ServiceError {
  override name = 'ServiceUpstreamError';
}

/**
 * A local problem found before any request: no API key, no base URL, an option out of range, a
 * credential or header HTTP cannot carry. Never crosses the wire.
 */
export class ServiceConfigError extends Error {
  override name = 'ServiceConfigError';
  constructor(
    readonly code: 'missing_api_key' | 'missing_base_url' | 'invalid_option',
    message: string,
  ) {
    super(message);
  }
}

/** The platform could not be reached, or did not answer in time, after every retry. */
export class ServiceConnectionError extends Error {
  override name = 'ServiceConnectionError';
  readonly code: 'network_error' | 'timeout';
  constructor(code: 'network_error' | 'timeout', message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

type ErrorClass = new (details: ServiceErrorDetails) => ServiceError;

const FAMILIES: Record<string, ErrorClass> = {
  unauthorized: ServiceAuthError,
  forbidden: ServiceAuthError,
  tenant_suspended: ServiceAuthError,
  not_connected: ServiceNotConnectedError,
  balance_exhausted: ServiceBalanceExhaustedError,
  spend_cap_exceeded: ServiceSpendCapError,
  rate_limited: ServiceRateLimitError,
  rate_limit_sse_streams: ServiceRateLimitError,
  validation_failed: ServiceValidationError,
  upstream_error: ServiceUpstreamError,
  // The flat code of the tenant billing gate's "out of credit".
  INSUFFICIENT_CREDITS: ServiceBalanceExhaustedError,
};

/** The code an answer without one stands for. */
function codeForStatus(status: number): string {
  if (status === 400 || status === 422) return 'validation_failed';
  if (status === 401) return 'unauthorized';
  if (status === 402) return 'balance_exhausted';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not_found';
  if (status === 405) return 'method_not_allowed';
  if (status === 409) return 'conflict';
  if (status === 413) return 'payload_too_large';
  if (status === 429) return 'rate_limited';
  if (status === 502) return 'upstream_error';
  return status >= 500 ? 'internal_error' : `http_${status}`;
}

const KNOWN_CODES = new Set<string>(Object.keys(SERVICE_ERROR_CODES));
const text = (value: unknown): string | undefined => (typeof value === 'string' && value ? value : undefined);

/**
 * `Retry-After` in seconds: delta-seconds (a fraction rounded up) or an HTTP date. Only a value
 * naming a day or month is read as a date: `Date.parse` reads `1.5` or `-1` as dates long past,
 * which would say "come back now".
 */
function retryAfterHeader(value: string | null, now = Date.now()): number | undefined {
  const trimmed = value?.trim();
  if (!trimmed) return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed));
  if (!/[a-z]{3}/i.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * Builds the typed error of a non-2xx answer from its status, headers and parsed body. Reads all
 * three body shapes of the API contract (canonical, nested, flat) and a `{ error: "<text>" }` string.
 * The class is chosen by `Service-Error-Code`, then `error.code`, then the status.
 */
export function errorFromAnswer(status: number, headers: Headers, body: unknown, url?: string): ServiceError {
  const top = record(body) ? body : undefined;
  const nested = record(top?.error) ? top.error : undefined;
  const headerCode = text(headers.get('service-error-code'));
  // A flat body's own code (`BILLING_NOT_SETUP`, `SLUG_TAKEN`) says more than one the status implies.
  const code =
    [headerCode, text(nested?.code)].find((c) => c !== undefined && KNOWN_CODES.has(c)) ??
    text(top?.code) ??
    text(nested?.code) ??
    codeForStatus(status);
  const message =
    text(nested?.message) ?? text(top?.error) ?? text(top?.message) ?? notPlatformAnswer(status, url);
  const retryAfter =
    typeof nested?.retry_after === 'number'
      ? nested.retry_after
      : retryAfterHeader(headers.get('retry-after'));
  const window = nested?.window === 'daily' || nested?.window === 'monthly' ? nested.window : undefined;
  const details: ServiceErrorDetails = {
    status,
    code,
    message,
    ...(retryAfter !== undefined ? { retryAfter } : {}),
    ...(text(nested?.connect_url) ? { connectUrl: text(nested?.connect_url) } : {}),
    ...(text(nested?.slug) ? { slug: text(nested?.slug) } : {}),
    ...(text(nested?.suggested_fix) ? { suggestedFix: text(nested?.suggested_fix) } : {}),
    ...(window ? { window } : {}),
    ...(text(nested?.resets_at) ? { resetsAt: text(nested?.resets_at) } : {}),
    ...(text(headers.get('x-request-id')) ? { requestId: text(headers.get('x-request-id')) } : {}),
    ...(body !== undefined ? { body } : {}),
  };
  // A code of its own keeps the family its status stands for (a 401 is an auth error whatever its
  // code), except 402: `BILLING_NOT_SETUP` is a gate to pass, not an exhausted balance.
  const Family =
    FAMILIES[code] ?? (status === 402 ? undefined : FAMILIES[codeForStatus(status)]) ?? ServiceError;
  return new Family(details);
}

/**
 * The message of an answer with no message in any of the platform's error shapes: most likely
 * another server (a wrong base URL, or one missing its path prefix), whose bare `HTTP 404` would
 * read as "no such thing" on the platform. Which URL answered is what tells the two apart.
 */
function notPlatformAnswer(status: number, url: string | undefined): string {
  if (url === undefined) return `HTTP ${status}`;
  const answered = `HTTP ${status} from ${url}`;
  if (status !== 404) return answered;
  return `${answered}, not in the platform's error shape: the base URL (baseUrl, or SERVICE_BASE_URL) may be wrong, or miss its path prefix`;
}

/**
 * A 401 from a route that takes only an App Key, with the reasons spelled out: every key starts
 * with `service_sk_`, so a CLI key (what `service login` saves) or a Connection Key looks right
 * and is refused all the same. The platform answers the same 401 to an unknown or revoked App Key,
 * so the hint names both causes rather than claiming the wrong kind of key.
 */
export function withAppKeyHint(error: unknown, route: string): unknown {
  if (!(error instanceof ServiceAuthError) || error.status !== 401) return error;
  const fix =
    "Set SERVICE_API_KEY (or createClient({ apiKey })) to the app's App Key. The key sent is unknown or revoked, or is not an App Key: the CLI key `service login` saves, Connection Keys and identity tokens are refused here.";
  return new ServiceAuthError({
    status: error.status,
    code: error.code,
    message: `${error.message}: ${route} takes an App Key. ${fix}`,
    suggestedFix: fix,
    ...(error.requestId !== undefined ? { requestId: error.requestId } : {}),
    ...(error.body !== undefined ? { body: error.body } : {}),
  });
}

/** Reads a response body as JSON when it is JSON, else as text (undefined when empty or unreadable). */
export async function readBody(response: Response): Promise<unknown> {
  return parseBody(await response.text().catch(() => ''));
}

/** A body's text as JSON when it is JSON, else the text itself (undefined when empty). */
export function parseBody(raw: string): unknown {
  if (!raw) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
