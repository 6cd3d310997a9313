import type { MeteringEngine } from '../billing/metering.js';
import { holdForCall } from '../billing/pricing.js';
import { BodyCutShortError } from '../http/body.js';
import type { FailedCredentialThrottle } from '../http/credential-throttle.js';
import { textProblem } from '../http/input-guard.js';
import type { Logger } from '../http/logger.js';
import { bearerToken } from '../identity/bearer.js';
import type { KeyPrincipal, KeyStore } from '../identity/key-store.js';
import { KEY_PREFIX } from '../identity/keys.js';
import type { TenantStatuses } from '../identity/tenant-status.js';
import type { ConnectionResolver } from './access.js';
import { callerResponseHeaders, type MeterTap, upstreamRequestHeaders } from './forwarding.js';
import { isFreeRoute, type ProviderCatalog, type ProviderConfig } from './providers.js';
import {
  balanceExhausted,
  bodyCutShort,
  FORWARDED_METHODS,
  instanceStopping,
  invalidKey,
  invalidModel,
  methodNotForwarded,
  missingKey,
  noPrice,
  notConnected,
  spendCapReached,
  tenantSuspended,
  tooLarge,
  tooManyFailedKeys,
  unknownProvider,
  unreadableBody,
  upstreamUnreachable,
} from './refusals.js';
import { type ForwardedRequest, type IncomingCall, readRequest, UnreadableBodyError } from './request.js';
import { type Admission, type MeteredCall, settleCall } from './settle.js';
import type { ChunkSource, UpstreamAnswer, UpstreamClient } from './upstream.js';
import { createUsageObserver } from './usage.js';

export interface ProxyCoreOptions {
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
  upstream: UpstreamClient;
}

/**
 * The upstream's answer for the caller: status, headers, and its body with, for a metered call,
 * the tap that reads its usage and bills it at its end. A refusal is a `Response` instead.
 */
export interface ProxiedAnswer {
  status: number;
  headers: Record<string, string>;
  body: ChunkSource | null;
  tap: MeterTap | null;
}

export interface ProxyCore {
  handle(call: IncomingCall): Promise<ProxiedAnswer | Response>;
}

/** The provider a call is for, and the connection its key reaches that provider through. */
interface Route {
  provider: ProviderConfig;
  connectionId: string;
}

/**
 * The metered path of the provider proxy, shared by its surfaces (the Hono routes and the Node
 * listener). Authenticates a `service_sk_*` key (bearer or `x-api-key`), derives the tenant from
 * it alone, checks the key may reach the provider, holds credit before the upstream call (402 at
 * or below zero, 402 on a tripped spend cap), forwards with the managed-pool credential, and hands
 * back the answer to pipe unbuffered, whose end debits what it says was used.
 *
 * @see docs/proxy.md
 */
export function createProxyCore(options: ProxyCoreOptions): ProxyCore {
  const maxRequestBytes = options.maxRequestBytes ?? 10 * 1024 * 1024;

  async function handle(call: IncomingCall): Promise<ProxiedAnswer | Response> {
    const key = await authenticate(call);
    if (key instanceof Response) return key;
    if (await options.tenantStatuses.isSuspended(key.tenantId)) return tenantSuspended();
    const route = await resolveRoute(key, call.provider);
    if (route instanceof Response) return route;
    if (!FORWARDED.has(call.method)) return methodNotForwarded(call.method);
    let request: ForwardedRequest | null;
    try {
      request = await readRequest(call, route.provider, maxRequestBytes);
    } catch (error) {
      // The caller went away mid-upload: nothing was held or forwarded.
      if (error instanceof BodyCutShortError) return bodyCutShort();
      if (error instanceof UnreadableBodyError) return unreadableBody(error.message);
      throw error;
    }
    if (!request) return tooLarge(maxRequestBytes);
    // The model is stored with the call's usage: text the store cannot hold is refused here.
    const modelProblem = request.model === null ? null : modelNameProblem(request.model);
    if (modelProblem) return invalidModel(modelProblem);
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
      const upstream = await forward(call, route.provider, request);
      if (upstream === null) {
        // Unreachable, the upload cut at the size limit, or the caller gone before the upstream
        // answered: nothing was answered, so nothing is billed.
        await release();
        return request.overLimit ? tooLarge(maxRequestBytes) : upstreamUnreachable(route.provider.slug);
      }
      if (request.overLimit) {
        // The upstream answered what it had of an upload cut off at the limit (an early refusal,
        // as a rule): the caller learns why it was cut, and nothing is billed.
        await release();
        upstream.body?.cancel();
        return tooLarge(maxRequestBytes);
      }
      const headers = callerResponseHeaders(upstream);
      // Free routes, and upstream errors and redirects, pass through unbilled.
      if (!admission || upstream.status < 200 || upstream.status >= 300) {
        await release();
        return { status: upstream.status, headers, body: upstream.body, tap: null };
      }
      const billed: MeteredCall = {
        key,
        provider: route.provider,
        connectionId: route.connectionId,
        model: request.model,
        maxOutputTokens: request.maxOutputTokens,
        admission,
        upstreamStatus: upstream.status,
        requestId: call.requestId,
      };
      if (!upstream.body) {
        // A 2xx without a body (a 204, an answer to HEAD) was served all the same: billed as an
        // answer that reports no usage, before it is answered.
        ended = true;
        await settleCall(
          options.metering,
          options.logger,
          billed,
          createUsageObserver(route.provider.dialect, false),
        );
        return { status: upstream.status, headers, body: null, tap: null };
      }
      const tap = meterTap(upstream, headers, billed);
      // From here the body's end bills the call.
      ended = true;
      return { status: upstream.status, headers, body: upstream.body, tap };
    } catch (error) {
      if (!ended) await release().catch(() => {});
      throw error;
    }
  }

  /**
   * The live key the call is made with: a `service_sk_` key as a bearer token or in `x-api-key`.
   * A key that fails is counted against the caller's address; past the limit, 429.
   */
  async function authenticate(call: IncomingCall): Promise<KeyPrincipal | Response> {
    const token = bearerToken(call.header('authorization')) ?? call.header('x-api-key')?.trim() ?? null;
    if (!token?.startsWith(KEY_PREFIX)) return missingKey();
    const throttle = options.credentials;
    const address = throttle ? call.clientAddress(throttle.trustedProxies) : '';
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
    if (admitted.ok) {
      // A call admitted from a lease reserves its worst case, yet is billed (when it reports no
      // usage) its expected cost, as one admitted in the store is.
      const { usageId, holdMicros, leaseId } = admitted;
      return { usageId, holdMicros, leaseId, estimateMicros: Math.min(holdMicros, hold.holdMicros) };
    }
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
    call: IncomingCall,
    provider: ProviderConfig,
    request: ForwardedRequest,
  ): Promise<UpstreamAnswer | null> {
    try {
      return await options.upstream.send({
        url: request.upstreamUrl,
        method: request.method,
        headers: upstreamRequestHeaders(call.headers(), poolCredential(provider)),
        body: request.body,
        signal: call.signal,
      });
    } catch (error) {
      // A caller gone, or an upload cut at the size limit, is not the provider's failure.
      if (call.signal.aborted || request.overLimit) return null;
      options.logger.warn('provider unreachable', {
        request_id: call.requestId,
        provider: provider.slug,
        error: error instanceof Error ? error.message : String(error),
      });
      return null;
    }
  }

  /**
   * What reads the answer's usage as it passes. The call is recorded in the settlement journal
   * before the answer ends (one synchronized write shared with the calls ending together) and
   * settled in the store after: the caller does not wait for the store. A balance read on this
   * instance waits for it (MeteringEngine.settled), so the caller still reads its spend.
   */
  function meterTap(upstream: UpstreamAnswer, headers: Record<string, string>, call: MeteredCall): MeterTap {
    const type = upstream.headers['content-type'] ?? '';
    const usage = createUsageObserver(
      call.provider.dialect,
      type.includes('text/event-stream'),
      /\bjson(?![\w-])/i.test(type),
    );
    const declared = Number(headers['content-length'] ?? Number.NaN);
    return {
      observe: usage.observe,
      // A completed answer ends once its bill is durable; a cut one is billed without holding anything up.
      end: (completed) => {
        const recorded = settleCall(options.metering, options.logger, call, usage);
        if (completed) return recorded;
        // A cut answer has nothing left to hold back; the failure is logged where it happens.
        recorded.catch(() => {});
        return undefined;
      },
      contentLength: Number.isSafeInteger(declared) && declared > 0 ? declared : null,
    };
  }

  return { handle };
}

const FORWARDED = new Set<string>(FORWARDED_METHODS);

/** Longest model name taken: names run to a few dozen characters, and each is stored with its call. */
const MAX_MODEL_CHARS = 256;

function modelNameProblem(model: string): string | null {
  if (model.length > MAX_MODEL_CHARS) return `must be at most ${MAX_MODEL_CHARS} characters`;
  return textProblem(model);
}

/** The header carrying the provider's managed-pool credential, or null when the upstream needs none. */
function poolCredential(provider: ProviderConfig): { header: string; value: string } | null {
  if (!provider.credential) return null;
  return {
    header: provider.authHeader,
    value: provider.authScheme ? `${provider.authScheme} ${provider.credential}` : provider.credential,
  };
}
