import type { MeteringEngine, Settlement } from '../billing/metering.js';
import { costOfCall, type Quantities } from '../billing/pricing.js';
import type { Logger } from '../http/logger.js';
import type { KeyPrincipal } from '../identity/key-store.js';
import type { ProviderConfig } from './providers.js';
import type { UsageObserver } from './usage.js';

/** Credit admission held for a call, and the lease it came from (null: its own hold row). */
export interface Admission {
  usageId: string;
  /** Credit reserved while the call runs (a call admitted from a lease reserves its worst case). */
  holdMicros: number;
  /** What the call is billed when it reports no usage: its expected cost, at most its hold. */
  estimateMicros: number;
  leaseId: string | null;
}

/** A metered call whose upstream answered 2xx: everything its settlement needs. */
export interface MeteredCall {
  key: KeyPrincipal;
  provider: ProviderConfig;
  connectionId: string;
  model: string | null;
  /** The request's bound on its output tokens (null: none); more is never billed. */
  maxOutputTokens: number | null;
  admission: Admission;
  upstreamStatus: number;
  requestId: string | null;
}

/**
 * Bills a call once its response has ended: what the upstream reported it used, priced by
 * billing, or the admission's hold when it reported nothing, or when its price cannot be
 * computed (a cost beyond the safe range): an admitted call always ends in a bill, so it never
 * stays counted in flight. Resolves once the bill is durable (in the settlement journal, or in
 * the store when the journal cannot be written), which the caller's answer waits for; the store
 * settles it in the background and, while the store is away, again until it takes it. Rejects
 * only when the bill is durable nowhere (journal and store both failing): the caller's answer is
 * then cut rather than completed, and the call is still settled from memory.
 *
 * @see docs/billing.md "Settlement journal"
 */
export async function settleCall(
  metering: MeteringEngine,
  logger: Logger,
  call: MeteredCall,
  usage: UsageObserver,
): Promise<void> {
  let settlement: Settlement;
  try {
    settlement = settlementOf(call, usage.finish());
  } catch (error) {
    logger.error('metered call could not be priced; billed what it held', {
      usage_id: call.admission.usageId,
      tenant_id: call.key.tenantId,
      provider: call.provider.slug,
      error: error instanceof Error ? error.message : String(error),
    });
    settlement = settlementOf(call, null);
  }
  try {
    await metering.record(settlement);
  } catch (error) {
    logger.error('metered call could not be recorded durably; its answer is cut', {
      usage_id: call.admission.usageId,
      tenant_id: call.key.tenantId,
      provider: call.provider.slug,
      error: error instanceof Error ? error.message : String(error),
    });
    throw error;
  }
}

/**
 * The call's bill: its reported usage priced, or (`reported` null) its expected cost as an
 * estimate. Output tokens past the request's own bound are the upstream's overrun, not billed.
 */
function settlementOf(call: MeteredCall, reported: Quantities | null): Settlement {
  const quantities: Quantities = { ...(reported ?? {}), call: 1 };
  const bound = call.maxOutputTokens;
  if (bound !== null && (quantities.output_tokens ?? 0) > bound) quantities.output_tokens = bound;
  const estimated = reported === null;
  const priced = estimated
    ? { total: call.admission.estimateMicros, perMeter: {} }
    : costOfCall(call.provider, call.model, quantities);
  return {
    usageId: call.admission.usageId,
    tenantId: call.key.tenantId,
    appId: call.key.appId,
    connectionId: call.connectionId,
    keyId: call.key.keyId,
    provider: call.provider.slug,
    model: call.model,
    quantities: estimated ? { call: 1 } : quantities,
    meterCosts: priced.perMeter,
    costMicros: priced.total,
    estimated,
    upstreamStatus: call.upstreamStatus,
    requestId: call.requestId,
    holdMicros: call.admission.holdMicros,
    leaseId: call.admission.leaseId,
  };
}
