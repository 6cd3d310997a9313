import { type Context, Hono } from 'hono';
import type { MeteringEngine } from '../billing/metering.js';
import { type CostLine, costMicros } from '../billing/pricing.js';
import { BodyTooLargeError, readBodyText } from '../http/body.js';
import { canonicalError } from '../http/errors.js';
import type { Logger } from '../http/logger.js';
import { bearerToken } from '../identity/bearer.js';
import type { KeyPrincipal, KeyStore } from '../identity/key-store.js';
import { KEY_PREFIX } from '../identity/keys.js';
import type { PlatformEnv } from '../platform/context.js';
import type { MeterName } from '../store/database.js';
import type { ConnectionResolver } from './access.js';
import { callerResponseHeaders, observedBody, upstreamRequestHeaders } from './forwarding.js';
import { isFreeRoute, type ProviderCatalog, type ProviderConfig, rateFor } from './providers.js';
import { createUsageObserver, type Quantities } from './usage.js';

export interface ProviderProxyOptions {
  keys: KeyStore;
  providers: ProviderCatalog;
  connections: ConnectionResolver;
  metering: MeteringEngine;
  logger: Logger;
  /** Public URL of the platform, for `connect_url`. */
  baseUrl: string;
  /** Largest request body forwarded. Default 10 MiB. */
  maxRequestBytes?: number;
  fetch?: typeof fetch;
}

/** The mount point: `{provider_proxy_url}` = `{base_url}/proxy/{provider}`. */
export const PROXY_PREFIX = '/proxy';

/**
 * The metering provider proxy. Authenticates a `service_sk_*` key (bearer or `x-api-key`), derives
 * the tenant from it alone, checks the key may reach the provider, holds credit before the upstream
 * call (402 at or below zero, 402 on a tripped spend cap), forwards with the managed-pool credential
 * and pipes the response back unbuffered, then debits what the response says was used.
 *
 * @see platform-spec.md "What the service does" 1 and 8
 * @see docs/proxy.md
 */
export function createProviderProxy(options: ProviderProxyOptions): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const maxRequestBytes = options.maxRequestBytes ?? 10 * 1024 * 1024;
  const upstreamFetch = options.fetch ?? fetch;

  app.all(`${PROXY_PREFIX}/:provider/*`, handle);
  app.all(`${PROXY_PREFIX}/:provider`, handle);

  async function handle(c: Context<PlatformEnv>): Promise<Response> {
    c.set('errorShape', 'canonical');
    const slug = c.req.param('provider') ?? '';
    const token = bearerToken(c.req.header('authorization')) ?? c.req.header('x-api-key')?.trim() ?? null;
    if (!token?.startsWith(KEY_PREFIX)) {
      return canonicalError(
        401,
        'unauthorized',
        'Missing or invalid API key: send a service_sk_ key as a Bearer token',
      );
    }
    const key = await options.keys.authenticate(token);
    if (!key) return canonicalError(401, 'unauthorized', 'Invalid or revoked API key');
    const provider = await options.providers.get(slug);
    if (!provider) return canonicalError(404, 'not_found', `Unknown provider: ${slug}`, { slug });
    const connectionId = await options.connections.connectionFor(key, slug);
    if (!connectionId) {
      return canonicalError(403, 'not_connected', `This key has no connection to ${slug}`, {
        slug,
        connect_url: `${options.baseUrl}/integrations/${encodeURIComponent(slug)}`,
        suggested_fix: `Connect ${slug} and bind the connection to this app`,
      });
    }

    const url = new URL(c.req.url);
    // Everything after /proxy/{provider}, as sent (the provider segment may be percent-encoded).
    const subPath = `/${url.pathname.split('/').slice(3).join('/')}`;
    const upstreamUrl = `${provider.upstreamUrl}${subPath}${url.search}`;
    const method = c.req.method.toUpperCase();
    const request = await readRequest(c.req.raw, provider, subPath, maxRequestBytes);
    if ('error' in request) return request.error;
    const free = isFreeRoute(provider.freeRoutes, method, subPath);

    let admission: { usageId: string; holdMicros: number; leaseId: string | null } | null = null;
    if (!free) {
      const pricing = priceOf(provider, request.model);
      if (!pricing) {
        return canonicalError(
          400,
          'validation_failed',
          request.model ? `No price for model ${request.model} on ${slug}` : `No price for calls to ${slug}`,
          { slug },
        );
      }
      const admitted = await options.metering.admit({
        tenantId: key.tenantId,
        appId: key.appId,
        holdMicros: pricing.holdMicros,
      });
      if (!admitted.ok && admitted.reason === 'balance_exhausted') {
        return canonicalError(402, 'balance_exhausted', 'Out of credit: add credit to make metered calls', {
          slug,
          suggested_fix: 'Top up the workspace balance',
        });
      }
      if (!admitted.ok) {
        return canonicalError(
          402,
          'spend_cap_exceeded',
          `The app's ${admitted.window} spend cap is reached; calls resume when the window resets`,
          {
            slug,
            window: admitted.window,
            resets_at: admitted.resetsAt.toISOString(),
            retry_after: Math.max(1, Math.ceil((admitted.resetsAt.getTime() - Date.now()) / 1000)),
          },
        );
      }
      admission = admitted;
    }

    let upstream: Response;
    try {
      upstream = await upstreamFetch(upstreamUrl, {
        method,
        headers: upstreamRequestHeaders(
          c.req.raw.headers,
          provider.credential
            ? {
                header: provider.authHeader,
                value: provider.authScheme
                  ? `${provider.authScheme} ${provider.credential}`
                  : provider.credential,
              }
            : null,
        ),
        body: request.body,
        redirect: 'manual',
        signal: c.req.raw.signal,
        // biome-ignore lint/suspicious/noExplicitAny: `duplex` is required by Node for streamed bodies but missing from RequestInit
        ...({ duplex: 'half' } as any),
      });
    } catch (error) {
      if (admission) await options.metering.release(admission, key.tenantId);
      options.logger.warn('provider unreachable', {
        request_id: c.get('requestId'),
        provider: slug,
        error: error instanceof Error ? error.message : String(error),
      });
      return canonicalError(502, 'upstream_error', `Could not reach ${slug}`, { slug });
    }

    const headers = callerResponseHeaders(upstream.headers);
    if (!admission || !upstream.body || upstream.status < 200 || upstream.status >= 300) {
      // Free routes, and upstream errors and redirects, pass through unbilled.
      if (admission) await options.metering.release(admission, key.tenantId);
      return new Response(upstream.body, {
        status: upstream.status,
        statusText: upstream.statusText,
        headers,
      });
    }

    const held = admission;
    const eventStream = (upstream.headers.get('content-type') ?? '').includes('text/event-stream');
    const observer = createUsageObserver(provider.dialect, eventStream);
    const settle = async (retried: boolean) => {
      const reported = observer.finish();
      const quantities: Quantities = { ...(reported ?? {}), call: 1 };
      const estimated = reported === null;
      const priced = estimated
        ? { total: held.holdMicros, perMeter: {} }
        : costOf(provider, request.model, quantities);
      await options.metering.settle({
        usageId: held.usageId,
        tenantId: key.tenantId,
        appId: key.appId,
        connectionId,
        keyId: key.keyId,
        provider: slug,
        model: request.model,
        quantities,
        meterCosts: priced.perMeter,
        costMicros: priced.total,
        estimated,
        upstreamStatus: upstream.status,
        requestId: c.get('requestId') ?? null,
        holdMicros: held.holdMicros,
        leaseId: held.leaseId,
        retried,
      });
    };
    // Settled after the response: the caller does not wait for the bookkeeping. A balance read
    // on this instance waits for it (MeteringEngine.settled), so the caller still reads its spend.
    const body = observedBody(upstream.body, observer.observe, () => {
      void settleWithRetry(settle, options.logger, key, slug, held.usageId);
    });
    return new Response(body, { status: upstream.status, statusText: upstream.statusText, headers });
  }

  return app;
}

interface ForwardedRequest {
  body: BodyInit | null;
  model: string | null;
}

/**
 * The body to forward. Token-metered providers get JSON bodies read whole (small, and the model
 * decides the price); a streamed chat completion is asked to report its usage in its last event.
 * Other bodies stream through as they come.
 */
async function readRequest(
  request: Request,
  provider: ProviderConfig,
  subPath: string,
  maxBytes: number,
): Promise<ForwardedRequest | { error: Response }> {
  if (!request.body) return { body: null, model: null };
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > maxBytes) return { error: tooLarge(maxBytes) };
  const json = (request.headers.get('content-type') ?? '').includes('json');
  if (provider.dialect === 'per_call' || !json) return { body: limited(request.body, maxBytes), model: null };
  let text: string;
  try {
    text = await readBodyText(request, { maxBytes });
  } catch (error) {
    if (error instanceof BodyTooLargeError) return { error: tooLarge(maxBytes) };
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { body: text, model: null };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    return { body: text, model: null };
  const fields = parsed as Record<string, unknown>;
  const model = typeof fields.model === 'string' ? fields.model : null;
  if (provider.dialect === 'openai' && fields.stream === true && subPath.endsWith('/chat/completions')) {
    const streamOptions = (fields.stream_options ?? {}) as Record<string, unknown>;
    if (streamOptions.include_usage !== true) {
      return {
        body: JSON.stringify({ ...fields, stream_options: { ...streamOptions, include_usage: true } }),
        model,
      };
    }
  }
  return { body: text, model };
}

function tooLarge(maxBytes: number): Response {
  return canonicalError(413, 'payload_too_large', `Request body is larger than ${maxBytes} bytes`);
}

/** Passes a body through, cutting it off past `maxBytes` (the upstream sees a failed upload). */
function limited(body: ReadableStream<Uint8Array>, maxBytes: number): ReadableStream<Uint8Array> {
  let size = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        size += chunk.byteLength;
        if (size > maxBytes) controller.error(new Error('Request body too large'));
        else controller.enqueue(chunk);
      },
    }),
  );
}

const TOKEN_METERS: MeterName[] = ['input_tokens', 'output_tokens'];

/**
 * Whether the call has a price, and what to hold for it: a per-call price is held exactly; a
 * token-metered call holds the provider's estimate plus any per-call price.
 */
function priceOf(provider: ProviderConfig, model: string | null): { holdMicros: number } | null {
  const call = rateFor(provider.rates, 'call', model);
  const callCost = call
    ? costMicros([{ quantity: 1, unitPriceMicros: call.unitPriceMicros }], provider.marginPercent)
    : 0;
  if (provider.dialect === 'per_call') return call ? { holdMicros: callCost } : null;
  const tokenRates = TOKEN_METERS.filter((meter) => rateFor(provider.rates, meter, model));
  if (tokenRates.length === 0 && !call) return null;
  return { holdMicros: provider.holdMicros + callCost };
}

/** The call's cost, rounded once, and each meter's cost rounded on its own (for reports). */
function costOf(
  provider: ProviderConfig,
  model: string | null,
  quantities: Quantities,
): { total: number; perMeter: Quantities } {
  const lines: CostLine[] = [];
  const perMeter: Quantities = {};
  for (const [meter, quantity] of Object.entries(quantities) as Array<[MeterName, number]>) {
    const rate = rateFor(provider.rates, meter, model);
    if (!rate || quantity <= 0) continue;
    const line = { quantity, unitPriceMicros: rate.unitPriceMicros };
    lines.push(line);
    perMeter[meter] = costMicros([line], provider.marginPercent);
  }
  return { total: costMicros(lines, provider.marginPercent), perMeter };
}

/**
 * A settlement that fails is tried once more; if that fails too the call stays unbilled (its hold
 * lapses) and the failure is logged with what is needed to bill it by hand. The caller's response
 * is never broken for it.
 */
async function settleWithRetry(
  settle: (retried: boolean) => Promise<void>,
  logger: Logger,
  key: KeyPrincipal,
  provider: string,
  usageId: string,
): Promise<void> {
  for (let attempt = 1; attempt <= 2; attempt++) {
    try {
      await settle(attempt > 1);
      return;
    } catch (error) {
      if (attempt === 2) {
        logger.error('metered call could not be settled', {
          usage_id: usageId,
          tenant_id: key.tenantId,
          provider,
          error: error instanceof Error ? error.message : String(error),
        });
      } else {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }
}
