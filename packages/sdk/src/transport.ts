import {
  backoffDelay,
  DEFAULT_RETRY,
  linkedController,
  type RetryOptions,
  sleep,
  startTimeout,
} from './backoff.js';
import {
  errorFromAnswer,
  parseBody,
  readBody,
  ServiceConfigError,
  ServiceConnectionError,
  ServiceError,
} from './errors.js';

/** Resolved settings of one client. */
export interface TransportSettings {
  /** Bearer sent on every request: an API key, or an identity JWT for `forUser`. */
  credential: string | undefined;
  baseUrl: string | undefined;
  fetch: typeof globalThis.fetch;
  /** Per attempt; above the longest timer (`Infinity`), none. */
  timeoutMs: number;
  retry: Required<RetryOptions>;
}

export interface RequestOptions {
  method?: string;
  /** JSON-encoded as the body. */
  body?: unknown;
  /** Extra headers, any case. `Authorization` is always the client's own credential. */
  headers?: Record<string, string>;
  /**
   * Sent as `Idempotency-Key` (as is an `Idempotency-Key` header) and reused by every retry of
   * this call. POSTs get a fresh random one when none is given, which is what makes retrying them
   * safe.
   */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** Settings checks that must fail before any request is sent. */
export function requireSettings(settings: TransportSettings): { credential: string; baseUrl: string } {
  if (!settings.credential) {
    throw new ServiceConfigError(
      'missing_api_key',
      'No API key: pass createClient({ apiKey }) or set SERVICE_API_KEY.',
    );
  }
  if (!settings.baseUrl) {
    throw new ServiceConfigError(
      'missing_base_url',
      'No base URL: pass createClient({ baseUrl }) or set SERVICE_BASE_URL.',
    );
  }
  if (!isPlatformUrl(settings.baseUrl)) {
    // `localhost:8787` without its scheme: fetch would fail on every attempt as if the platform
    // were down, and the event stream would retry it for minutes.
    throw new ServiceConfigError(
      'invalid_option',
      `The base URL ${JSON.stringify(settings.baseUrl)} (baseUrl, or SERVICE_BASE_URL) is not an http:// or https:// URL: write it whole, such as https://platform.example.com`,
    );
  }
  if (!isHeaderSafe(settings.credential)) {
    // Named, never quoted: the credential is a secret (and fetch's own TypeError would quote it).
    throw new ServiceConfigError(
      'invalid_option',
      'The API key (or forUser token) has a character an HTTP header cannot carry: only visible ASCII, no spaces or line breaks. Was it copied with a stray character?',
    );
  }
  return { credential: settings.credential, baseUrl: settings.baseUrl };
}

/**
 * Whether the base URL is one fetch can call: an http(s) URL (in a browser, relative to the page,
 * as fetch reads it there).
 */
function isPlatformUrl(value: string): boolean {
  const page = (globalThis as { location?: { href?: string } }).location?.href;
  try {
    return ['http:', 'https:'].includes(new URL(value, page).protocol);
  } catch {
    return false;
  }
}

/**
 * Whether a value the SDK puts in a header itself (a credential, `Last-Event-ID`) is visible
 * ASCII. Anything else makes fetch throw a TypeError, which would surface raw or, inside a
 * retried request, pass for a network error.
 */
export function isHeaderSafe(value: string): boolean {
  return /^[\x21-\x7e]*$/.test(value);
}

const METHOD_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);

/**
 * A method and body fetch would refuse to send (a method that is not a token, a GET with a body):
 * a `ServiceConfigError` before any request. Sent, fetch's TypeError would pass for an unreachable
 * platform (and, inside a retried request, be tried again).
 */
export function checkMethodAndBody(method: string, hasBody: boolean): void {
  if (!METHOD_TOKEN.test(method) || FORBIDDEN_METHODS.has(method.toUpperCase())) {
    throw new ServiceConfigError(
      'invalid_option',
      `The method ${JSON.stringify(method)} is not one fetch can send`,
    );
  }
  const upper = method.toUpperCase();
  if ((upper === 'GET' || upper === 'HEAD') && hasBody) {
    throw new ServiceConfigError(
      'invalid_option',
      `A ${upper} request cannot carry a body: pass a method such as 'POST', or leave the body out`,
    );
  }
}

/** The caller's headers as a `Headers`; one fetch could not send is a `ServiceConfigError`. */
export function callerHeaders(init: HeadersInit | undefined): Headers {
  const headers = new Headers();
  const given = init instanceof Headers || Array.isArray(init) ? init : Object.entries(init ?? {});
  for (const [name, value] of given) setHeader(headers, name, value, 'append');
  return headers;
}

/**
 * `headers.set` (or `append`); a header fetch could not send (a line break, a character above
 * U+00FF, a name that is not a token) is a `ServiceConfigError` naming it, not quoting its value,
 * which may be a secret.
 */
export function setHeader(
  headers: Headers,
  name: string,
  value: string,
  how: 'set' | 'append' = 'set',
): void {
  try {
    headers[how](name, value);
  } catch {
    throw new ServiceConfigError(
      'invalid_option',
      `The header ${JSON.stringify(name)} cannot be sent: a header name is a token, and a value has no line breaks and no character above U+00FF`,
    );
  }
}

/** A 2xx answer with its body read (JSON when it is JSON, else text). */
export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

/**
 * Sends one logical request: a timeout per attempt that covers the body as well as the headers;
 * retries with jittered exponential backoff on network errors, timeouts, bodies cut short and 5xx
 * answers (after their `Retry-After` when they have one, as is a 429 that has one) when the call is
 * idempotent (GET and friends, or a POST carrying an `Idempotency-Key`, reused across the
 * retries); the typed error of any other non-2xx answer.
 *
 * Headers are merged case-insensitively: the caller's `Accept` or `Content-Type` win, its
 * `Authorization` never does (the client's credential is the bearer), and an `Idempotency-Key`
 * given as a header is the one reused.
 */
export async function send(
  settings: TransportSettings,
  path: string,
  options: RequestOptions = {},
): Promise<Answer> {
  const { credential, baseUrl } = requireSettings(settings);
  const method = (options.method ?? 'GET').toUpperCase();
  checkMethodAndBody(method, options.body !== undefined);
  const headers = callerHeaders(options.headers);
  headers.set('authorization', `Bearer ${credential}`);
  if (!headers.has('accept')) headers.set('accept', 'application/json');
  if (options.body !== undefined && !headers.has('content-type')) {
    headers.set('content-type', 'application/json');
  }
  const idempotencyKey =
    options.idempotencyKey ??
    headers.get('idempotency-key') ??
    (method === 'POST' ? crypto.randomUUID() : undefined);
  if (idempotencyKey) setHeader(headers, 'idempotency-key', idempotencyKey);
  const retryable = IDEMPOTENT_METHODS.has(method) || idempotencyKey !== undefined;
  const attempts = retryable ? Math.max(1, settings.retry.attempts) : 1;
  const url = joinUrl(baseUrl, path);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);

  for (let attempt = 1; ; attempt++) {
    const last = attempt >= attempts;
    /** The wait an answer asked for (`Retry-After`), in place of the backoff. */
    let serverWaitMs: number | undefined;
    const { controller, release } = linkedController(options.signal);
    const timeout = new ServiceConnectionError(
      'timeout',
      `No answer from ${url} within ${settings.timeoutMs} ms`,
    );
    const clearTimer = startTimeout(settings.timeoutMs, () => controller.abort(timeout));
    try {
      const response = await settings.fetch(url, { method, headers, body, signal: controller.signal });
      if (response.ok) {
        // Read under the same timer: a body that stalls is as much a failure as no answer.
        return { status: response.status, headers: response.headers, body: parseBody(await response.text()) };
      }
      // A JSON body may say when to come back (`retry_after`): read under the same timer. Another
      // (a load balancer's page) matters to no retry, so one that stalls does not hold it back.
      const mayRetry = !last && (response.status >= 500 || response.status === 429);
      const answerBody =
        mayRetry && !/\bjson\b/i.test(response.headers.get('content-type') ?? '')
          ? await response.body?.cancel().catch(() => {})
          : await readBody(response);
      const failure = errorFromAnswer(response.status, response.headers, answerBody, url);
      const retry = retryOfAnswer(settings, response.status, failure.retryAfter);
      if (last || !retry) throw failure;
      serverWaitMs = retry.waitMs;
    } catch (error) {
      if (error instanceof ServiceError) throw error;
      // The caller's own abort ends the call as it asked, never retried.
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      const failure = controller.signal.aborted
        ? timeout
        : new ServiceConnectionError('network_error', `Could not reach ${url}`, { cause: error });
      if (last) throw failure;
    } finally {
      clearTimer();
      release();
    }
    await sleep(serverWaitMs ?? delay(settings, attempt), options.signal);
  }
}

/** `send`, then the body checked by `isShape` (a hand-narrowed check of the server's shape). */
export async function requestJson<T>(
  settings: TransportSettings,
  path: string,
  isShape: (value: unknown) => value is T,
  options: RequestOptions = {},
): Promise<T> {
  const answer = await send(settings, path, options);
  if (!isShape(answer.body)) {
    throw new ServiceError({
      status: answer.status,
      code: 'invalid_response',
      message: `Unexpected response from ${path}: not the platform's shape. Is the base URL the platform's?`,
      body: answer.body,
    });
  }
  return answer.body;
}

/**
 * Whether an error answer is retried, and after what: a 5xx after its `Retry-After` when it has
 * one (`waitMs`), else after the backoff; a 429 only after its `Retry-After` (without one, trying
 * again at once would meet the same limit). A `Retry-After` longer than `maxDelayMs` is not waited
 * out, nor retried early: the error is thrown at once, carrying `retryAfter`, for the caller.
 */
function retryOfAnswer(
  settings: TransportSettings,
  status: number,
  retryAfter: number | undefined,
): { waitMs?: number } | undefined {
  if (status !== 429 && status < 500) return undefined;
  if (retryAfter === undefined) return status === 429 ? undefined : {};
  const waitMs = Math.max(0, retryAfter * 1000);
  return waitMs > settings.retry.maxDelayMs ? undefined : { waitMs };
}

function delay(settings: TransportSettings, attempt: number): number {
  return backoffDelay(attempt, settings.retry.baseDelayMs, settings.retry.maxDelayMs);
}

/** `base` + `path`, keeping any path prefix of the base URL. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

export { DEFAULT_RETRY };
