import type { z } from 'zod';
import { backoffDelay, DEFAULT_RETRY, linkedController, type RetryOptions, sleep } from './backoff.js';
import {
  errorFromAnswer,
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
  timeoutMs: number;
  retry: Required<RetryOptions>;
}

export interface RequestOptions {
  method?: string;
  /** JSON-encoded as the body. */
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * Sent as `Idempotency-Key` and reused by every retry of this call. POSTs get a fresh random
   * one when none is given, which is what makes retrying them safe.
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
  return { credential: settings.credential, baseUrl: settings.baseUrl };
}

/**
 * Sends one logical request: a timeout per attempt; retries with jittered exponential backoff on
 * network errors, timeouts and 5xx answers when the call is idempotent (GET and friends, or a
 * POST carrying an `Idempotency-Key`, reused across the retries); the typed error of any other
 * non-2xx answer. Returns the 2xx response unread.
 */
export async function send(
  settings: TransportSettings,
  path: string,
  options: RequestOptions = {},
): Promise<Response> {
  const { credential, baseUrl } = requireSettings(settings);
  const method = (options.method ?? 'GET').toUpperCase();
  const headers: Record<string, string> = {
    accept: 'application/json',
    ...options.headers,
    authorization: `Bearer ${credential}`,
  };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const idempotencyKey = options.idempotencyKey ?? (method === 'POST' ? crypto.randomUUID() : undefined);
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  const retryable = IDEMPOTENT_METHODS.has(method) || idempotencyKey !== undefined;
  const attempts = retryable ? Math.max(1, settings.retry.attempts) : 1;
  const url = joinUrl(baseUrl, path);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);

  for (let attempt = 1; ; attempt++) {
    const last = attempt >= attempts;
    const { controller, release } = linkedController(options.signal);
    const timer = setTimeout(
      () =>
        controller.abort(
          new ServiceConnectionError('timeout', `No answer from ${url} within ${settings.timeoutMs} ms`),
        ),
      settings.timeoutMs,
    );
    let response: Response;
    try {
      response = await settings.fetch(url, { method, headers, body, signal: controller.signal });
    } catch (error) {
      clearTimeout(timer);
      release();
      // The caller's own abort ends the call as it asked, never retried.
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      const failure =
        error instanceof ServiceConnectionError
          ? error
          : new ServiceConnectionError('network_error', `Could not reach ${url}`, { cause: error });
      if (last) throw failure;
      await sleep(delay(settings, attempt), options.signal);
      continue;
    }
    clearTimeout(timer);
    release();
    if (response.ok) return response;
    if (response.status >= 500 && !last) {
      await response.body?.cancel().catch(() => {});
      await sleep(delay(settings, attempt), options.signal);
      continue;
    }
    throw errorFromAnswer(response.status, response.headers, await readBody(response));
  }
}

/** `send`, then the body parsed as JSON and checked against `schema` (the server's own). */
export async function requestJson<T>(
  settings: TransportSettings,
  path: string,
  schema: z.ZodType<T>,
  options: RequestOptions = {},
): Promise<T> {
  const response = await send(settings, path, options);
  const body = await readBody(response);
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new ServiceError({
      status: response.status,
      code: 'invalid_response',
      message: `Unexpected response from ${path}: ${parsed.error.issues[0]?.message ?? 'wrong shape'}`,
      body,
    });
  }
  return parsed.data;
}

function delay(settings: TransportSettings, attempt: number): number {
  return backoffDelay(attempt, settings.retry.baseDelayMs, settings.retry.maxDelayMs);
}

/** `base` + `path`, keeping any path prefix of the base URL. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

export { DEFAULT_RETRY };
