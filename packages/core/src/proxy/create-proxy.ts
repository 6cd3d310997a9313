import { type Context, Hono } from 'hono';
import type { MeteringEngine } from '../billing/metering.js';
import { holdForCall } from '../billing/pricing.js';
import { whenClientGone } from '../http/client-gone.js';
import { clientIp } from '../http/client-ip.js';
import type { FailedCredentialThrottle } from '../http/credential-throttle.js';
import type { Logger } from '../http/logger.js';
import { bearerToken } from '../identity/bearer.js';
import type { KeyPrincipal, KeyStore } from '../identity/key-store.js';
import { KEY_PREFIX } from '../identity/keys.js';
import type { TenantStatuses } from '../identity/tenant-status.js';
import type { ConnectionResolver } from './access.js';
import type { ProxyEnv } from './env.js';
import { callerResponseHeaders, observedBody, upstreamRequestHeaders } from './forwarding.js';
import { isFreeRoute, type ProviderCatalog, type ProviderConfig } from './providers.js';
import {
  balanceExhausted,
  instanceStopping,
  invalidKey,
  missingKey,
  noPrice,
  notConnected,
  spendCapReached,
  tenantSuspended,
  tooManyFailedKeys,
  unknownProvider,
  upstreamUnreachable,
} from './refusals.js';
import { type ForwardedRequest, readRequest } from './request.js';
import { type Admission, type MeteredCall, settleCall } from './settle.js';
import { createUsageObserver } from './usage.js';

export interface ProviderProxyOptions {
  keys: KeyStore;
  providers: ProviderCatalog;
  connections: ConnectionResolver;
  metering: MeteringEngine;
  /** A suspended tenant's calls are refused (403) before anything is held or forwarded. */
  tenantStatuses: TenantStatuses;
  logger: Logger;
  /** Public URL of the platform, for `connect_url`. */
  baseUrl: string;
  /** Failed keys counted per client address; an address past the limit is answered 429. */
  credentials?: { throttle: FailedCredentialThrottle; trustedProxies: number };
  /** Largest request body forwarded. Default 10 MiB. */
  maxRequestBytes?: number;
  fetch?: typeof fetch;
}

/** The mount point: `{provider_proxy_url}` = `{base_url}/proxy/{provider}`. */
export const PROXY_PREFIX = '/proxy';

/** The provider a call is for, and the connection its key reaches that provider through. */
interface Route {
  provider: ProviderConfig;
  connectionId: string;
}

/**
 * The metering provider proxy. Authenticates a `service_sk_*` key (bearer or `x-api-key`), derives
 * the tenant from it alone, checks the key may reach the provider, holds credit before the upstream
 * call (402 at or below zero, 402 on a tripped spend cap), forwards with the managed-pool credential
 * and pipes the response back unbuffered, then debits what the response says was used.
 *
 * @see docs/proxy.md
 */
export function createProviderProxy(options: ProviderProxyOptions): Hono<ProxyEnv> {
  const app = new Hono<ProxyEnv>();
  const maxRequestBytes = options.maxRequestBytes ?? 10 * 1024 * 1024;
  const upstreamFetch = options.fetch ?? fetch;

  app.all(`${PROXY_PREFIX}/:provider/*`, handle);
  app.all(`${PROXY_PREFIX}/:provider`, handle);

  async function handle(c: Context<ProxyEnv>): Promise<Response> {
    c.set('errorShape', 'canonical');
    const key = await authenticate(c);
    if (key instanceof Response) return key;
    if (await options.tenantStatuses.isSuspended(key.tenantId)) return tenantSuspended();
    const route = await resolveRoute(key, c.req.param('provider') ?? '');
    if (route instanceof Response) return route;
    const request = await readRequest(c.req.raw, route.provider, maxRequestBytes);
    if (request instanceof Response) return request;
    const admission = await admit(key, route.provider, request);
    if (admission instanceof Response) return admission;
    // An admitted call ends in exactly one of a bill or a release, whatever throws: else it stays
    // counted in flight (a stop waits for it) and its hold stays taken.
    let ended = false;
    const release = () => {
      ended = true;
      return admission ? options.metering.release(admission, key.tenantId) : Promise.resolve();
    };
    try {
      const upstream = await forward(c, route.provider, request);
      if (!upstream) {
        await release();
        return upstreamUnreachable(route.provider.slug);
      }
      // Free routes, and upstream errors and redirects, pass through unbilled.
      if (!admission || !upstream.body || upstream.status < 200 || upstream.status >= 300) {
        return await passThrough(upstream, release);
      }
      const response = meter(c, upstream, upstream.body, {
        key,
        provider: route.provider,
        connectionId: route.connectionId,
        model: request.model,
        admission,
        upstreamStatus: upstream.status,
        requestId: c.get('requestId') ?? null,
      });
      // From here the body's end bills the call.
      ended = true;
      return response;
    } catch (error) {
      if (!ended) await release().catch(() => {});
      throw error;
    }
  }

  /**
   * The live key the call is made with: a `service_sk_` key as a bearer token or in `x-api-key`.
   * A key that fails is counted against the caller's address; past the limit, 429.
   */
  async function authenticate(c: Context<ProxyEnv>): Promise<KeyPrincipal | Response> {
    const request = c.req.raw;
    const token =
      bearerToken(request.headers.get('authorization')) ?? request.headers.get('x-api-key')?.trim() ?? null;
    if (!token?.startsWith(KEY_PREFIX)) return missingKey();
    const throttle = options.credentials;
    const address = throttle ? clientIp(request, c.env, { trustedProxies: throttle.trustedProxies }) : '';
    const blocked = throttle?.throttle.retryAfter(address) ?? null;
    if (blocked !== null) return tooManyFailedKeys(blocked);
    const key = await options.keys.authenticate(token);
    if (key) return key;
    const wait = throttle ? await throttle.throttle.failed(address) : null;
    return wait === null ? invalidKey() : tooManyFailedKeys(wait);
  }

  async function resolveRoute(key: KeyPrincipal, slug: string): Promise<Route | Response> {
    const provider = await options.providers.get(slug);
    if (!provider) return unknownProvider(slug);
    const connectionId = await options.connections.connectionFor(key, slug);
    if (!connectionId) return notConnected(slug, options.baseUrl);
    return { provider, connectionId };
  }

  /**
   * Holds credit for a priced call against the balance (and the app's spend caps); null for a
   * free route, which holds nothing.
   */
  async function admit(
    key: KeyPrincipal,
    provider: ProviderConfig,
    request: ForwardedRequest,
  ): Promise<Admission | null | Response> {
    if (isFreeRoute(provider.freeRoutes, request.method, request.subPath)) return null;
    const hold = holdForCall(provider, request, options.metering.typicalCost(provider.slug, request.model));
    if (hold === null) return noPrice(provider.slug, request.model);
    const admitted = await options.metering.admit({
      tenantId: key.tenantId,
      appId: key.appId,
      holdMicros: hold.holdMicros,
      worstMicros: hold.worstMicros,
    });
    if (admitted.ok) return admitted;
    switch (admitted.reason) {
      case 'balance_exhausted':
        return balanceExhausted(provider.slug);
      case 'spend_cap_exceeded':
        return spendCapReached(provider.slug, admitted.window, admitted.resetsAt);
      case 'stopping':
        return instanceStopping();
    }
  }

  /** The upstream's answer to the call sent with the managed-pool credential; null (logged) when unreachable. */
  async function forward(
    c: Context<ProxyEnv>,
    provider: ProviderConfig,
    request: ForwardedRequest,
  ): Promise<Response | null> {
    try {
      return await upstreamFetch(request.upstreamUrl, {
        method: request.method,
        headers: upstreamRequestHeaders(c.req.raw.headers, poolCredential(provider)),
        body: request.body,
        redirect: 'manual',
        signal: c.req.raw.signal,
        // biome-ignore lint/suspicious/noExplicitAny: `duplex` is required by Node for streamed bodies but missing from RequestInit
        ...({ duplex: 'half' } as any),
      });
    } catch (error) {
      options.logger.warn('provider unreachable', {
        request_id: c.get('requestId'),
        provider: provider.slug,
        error: error instanceof Error ? error.message : String(error),
      });
      return null;
    }
  }

  /** The upstream's answer as it is, giving back what the call held. */
  async function passThrough(upstream: Response, release: () => Promise<void>): Promise<Response> {
    const headers = callerResponseHeaders(upstream.headers);
    await release();
    return new Response(upstream.body, { status: upstream.status, statusText: upstream.statusText, headers });
  }

  /**
   * The upstream's answer, piped back unbuffered while its usage is read from it. The call is
   * recorded in the settlement journal before the answer ends (a fdatasync shared with the calls
   * ending together) and settled in the store after: the caller does not wait for the store. A
   * balance read on this instance waits for it (MeteringEngine.settled), so the caller still
   * reads its spend.
   */
  function meter(
    c: Context<ProxyEnv>,
    upstream: Response,
    body: ReadableStream<Uint8Array>,
    call: MeteredCall,
  ): Response {
    const headers = callerResponseHeaders(upstream.headers);
    const eventStream = (upstream.headers.get('content-type') ?? '').includes('text/event-stream');
    const usage = createUsageObserver(call.provider.dialect, eventStream);
    const declared = Number(headers.get('content-length') ?? Number.NaN);
    // A caller gone before its answer is written never reads nor cancels the body: the call ends
    // as cut (billed for what it used, or its hold), so it is not left counted in flight.
    const abandoned = new AbortController();
    whenClientGone(c.env, c.req.raw.signal, () => abandoned.abort(new Error('The caller went away')));
    const observed = observedBody(
      body,
      usage.observe,
      // A completed answer ends once its bill is durable; a cut one is billed without holding anything up.
      (completed) => {
        const recorded = settleCall(options.metering, options.logger, call, usage);
        return completed ? recorded : undefined;
      },
      Number.isSafeInteger(declared) && declared > 0 ? declared : null,
      abandoned.signal,
    );
    return new Response(observed, { status: upstream.status, statusText: upstream.statusText, headers });
  }

  return app;
}

/** The header carrying the provider's managed-pool credential, or null when the upstream needs none. */
function poolCredential(provider: ProviderConfig): { header: string; value: string } | null {
  if (!provider.credential) return null;
  return {
    header: provider.authHeader,
    value: provider.authScheme ? `${provider.authScheme} ${provider.credential}` : provider.credential,
  };
}
