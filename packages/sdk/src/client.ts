import type { BillingBalance, RuntimeConnection, ServiceEvent } from '@service/core/schemas';
import { DEFAULT_RETRY, type RetryOptions } from './backoff.js';
import { readEnv } from './env.js';
import { ServiceConfigError, withAppKeyHint } from './errors.js';
import { type ReconnectOptions, type SubscribeOptions, subscribeToEvents } from './events.js';
import { attemptsOption, callbackOption, delayOption, objectOption, timeoutOption } from './options.js';
import { proxyFetch } from './proxy.js';
import { isBillingBalance, isRuntimeConnections } from './shapes.js';
import { isHeaderSafe, type RequestOptions, requestJson, send, type TransportSettings } from './transport.js';

export interface ClientOptions {
  /**
   * An App Key or Connection Key (`service_sk_*`). Default: `SERVICE_API_KEY`. An empty string is
   * an error, not a request for the default.
   */
  apiKey?: string;
  /** The platform's URL, with any path prefix. Default: `SERVICE_BASE_URL`. An empty string is an error. */
  baseUrl?: string;
  /** The fetch to use (a test double, an instrumented fetch). Default: the global one. */
  fetch?: typeof globalThis.fetch;
  /**
   * Per-attempt timeout of ordinary requests. Default 30 s; `Infinity` for none. The event stream
   * has none.
   */
  timeoutMs?: number;
  /** Retries of idempotent requests on network errors and 5xx; `false` turns them off. */
  retry?: RetryOptions | false;
  /** Reconnection of the event stream. */
  reconnect?: ReconnectOptions;
}

/** Connections of the app the key belongs to. */
export interface ConnectionsApi {
  /** Every live connection of the app (revoked ones are not listed). App Key only. */
  list(options?: { signal?: AbortSignal }): Promise<RuntimeConnection[]>;
  /** The app's connection to one provider, or null when it has none. */
  get(slug: string, options?: { signal?: AbortSignal }): Promise<RuntimeConnection | null>;
}

export interface EventsApi {
  /**
   * Canonical events of the app, each once, across reconnects. App Key only.
   *
   * @example
   * const controller = new AbortController();
   * for await (const event of client.events.subscribe({ signal: controller.signal })) {
   *   if (event.kind.startsWith('connection.')) await reloadConnections();
   * }
   */
  subscribe(options?: SubscribeOptions): AsyncIterableIterator<ServiceEvent>;
}

/** Provider calls through the platform's metering proxy. */
export interface ProxyApi {
  /**
   * Calls `{baseUrl}/proxy/{provider}{path}` with this client's key and resolves to the
   * provider's response, streamed as it comes. The proxy's own refusals (they carry
   * `Service-Error-Code`: out of credit, spend cap, not connected, bad key, unreachable provider)
   * reject with their typed error; the provider's own error answers are returned untouched.
   * Never retried: a metered call is not idempotent.
   * A path that resolves outside `/proxy/{provider}/` (`..`, `%2e%2e`) is a `ServiceConfigError`
   * before any request.
   *
   * @example
   * const response = await client.proxy.fetch('llm-gateway', '/v1/chat/completions', {
   *   method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request),
   * });
   */
  fetch(provider: string, path: string, init?: RequestInit): Promise<Response>;
}

export interface ServiceClient {
  /** The tenant's credit (`GET /api/billing/balance`): advisory, the proxy enforces it. */
  balance(options?: { signal?: AbortSignal }): Promise<BillingBalance>;
  readonly connections: ConnectionsApi;
  readonly events: EventsApi;
  readonly proxy: ProxyApi;
  /**
   * A client that acts as a signed-in user: it sends the identity JWT as its bearer. This client
   * is unchanged. Only routes that accept identity tokens answer it (the balance does; the
   * runtime connections and events are App Key only).
   */
  forUser(jwt: string): ServiceClient;
  /**
   * Any other JSON route, with this client's credential, timeout, retries and typed errors.
   * Resolves to the parsed body.
   */
  request(path: string, options?: RequestOptions): Promise<unknown>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RECONNECT: Required<ReconnectOptions> = {
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  idleTimeoutMs: 60_000,
  headersTimeoutMs: 15_000,
  maxAttempts: 10,
};
const RUNTIME_CONNECTIONS_PATH = '/api/deployments/me/connections';

/** The value of an option that was given, refusing a blank one (it would silently mean "unset"). */
function given(name: 'apiKey' | 'baseUrl', value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ServiceConfigError(
      'invalid_option',
      `${name} is empty: pass a value, or leave it out to read ${name === 'apiKey' ? 'SERVICE_API_KEY' : 'SERVICE_BASE_URL'}`,
    );
  }
  return value.trim();
}

/** `retry` as the transport reads it: `false` is one attempt; each number given is checked. */
function retryOption(value: ClientOptions['retry']): Required<RetryOptions> {
  if (value === false) return { ...DEFAULT_RETRY, attempts: 1 };
  const retry = objectOption<RetryOptions>('retry', value) ?? {};
  return {
    attempts: attemptsOption('retry.attempts', retry.attempts ?? DEFAULT_RETRY.attempts),
    baseDelayMs: delayOption('retry.baseDelayMs', retry.baseDelayMs ?? DEFAULT_RETRY.baseDelayMs),
    maxDelayMs: delayOption('retry.maxDelayMs', retry.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs, true),
  };
}

/**
 * The platform client. Its options are checked here: one out of range (a `retry.attempts` of 0, a
 * NaN timeout) throws a `ServiceConfigError` at once. A missing key or base URL is checked at the
 * first call, which rejects with a `ServiceConfigError` before any request is sent.
 *
 * @see docs/sdk.md
 * @example
 * import { createClient } from '@service/sdk';
 * const client = createClient(); // SERVICE_API_KEY, SERVICE_BASE_URL
 * const { credits_remaining_micros } = await client.balance();
 */
export function createClient(options: ClientOptions = {}): ServiceClient {
  // Not a function, it would throw inside every attempt and be retried as an unreachable platform.
  callbackOption('fetch', options.fetch);
  const retry = retryOption(options.retry);
  const timeoutMs = timeoutOption('timeoutMs', options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const tuning = objectOption<ReconnectOptions>('reconnect', options.reconnect) ?? {};
  const reconnect: Required<ReconnectOptions> = {
    idleTimeoutMs: timeoutOption(
      'reconnect.idleTimeoutMs',
      tuning.idleTimeoutMs ?? DEFAULT_RECONNECT.idleTimeoutMs,
    ),
    headersTimeoutMs: timeoutOption(
      'reconnect.headersTimeoutMs',
      tuning.headersTimeoutMs ?? DEFAULT_RECONNECT.headersTimeoutMs,
    ),
    baseDelayMs: delayOption('reconnect.baseDelayMs', tuning.baseDelayMs ?? DEFAULT_RECONNECT.baseDelayMs),
    maxDelayMs: delayOption('reconnect.maxDelayMs', tuning.maxDelayMs ?? DEFAULT_RECONNECT.maxDelayMs, true),
    maxAttempts: attemptsOption(
      'reconnect.maxAttempts',
      tuning.maxAttempts ?? DEFAULT_RECONNECT.maxAttempts,
      'never gives up',
    ),
  };
  const settings: TransportSettings = {
    credential: given('apiKey', options.apiKey) ?? readEnv('SERVICE_API_KEY'),
    baseUrl: given('baseUrl', options.baseUrl) ?? readEnv('SERVICE_BASE_URL'),
    // Bound late, so a fetch patched after the client was made (a test double) is the one used.
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    timeoutMs,
    retry,
  };
  return buildClient(settings, reconnect);
}

function buildClient(settings: TransportSettings, reconnect: Required<ReconnectOptions>): ServiceClient {
  const connections: ConnectionsApi = {
    list: async (options = {}) => {
      try {
        return (await requestJson(settings, RUNTIME_CONNECTIONS_PATH, isRuntimeConnections, options))
          .connections;
      } catch (error) {
        throw withAppKeyHint(error, RUNTIME_CONNECTIONS_PATH);
      }
    },
    get: async (slug, options = {}) =>
      (await connections.list(options)).find((connection) => connection.slug === slug) ?? null,
  };
  return {
    balance: (options = {}) => requestJson(settings, '/api/billing/balance', isBillingBalance, options),
    connections,
    events: { subscribe: (options) => subscribeToEvents(settings, reconnect, options) },
    proxy: { fetch: (provider, path, init) => proxyFetch(settings, provider, path, init) },
    forUser: (jwt) => {
      if (typeof jwt !== 'string' || jwt.trim() === '') {
        throw new ServiceConfigError(
          'invalid_option',
          'forUser needs the identity JWT of the signed-in user',
        );
      }
      if (/^bearer\s/i.test(jwt.trim())) {
        // The host's own request header passed on whole: the scheme is the SDK's to add.
        throw new ServiceConfigError(
          'invalid_option',
          "forUser takes the identity JWT itself, not an Authorization header: leave out the 'Bearer ' in front",
        );
      }
      if (!isHeaderSafe(jwt.trim())) {
        throw new ServiceConfigError(
          'invalid_option',
          'The forUser token has a character an HTTP header cannot carry: a JWT is visible ASCII, with no spaces or line breaks',
        );
      }
      return buildClient({ ...settings, credential: jwt.trim() }, reconnect);
    },
    request: async (path, options = {}) => (await send(settings, path, options)).body,
  };
}
