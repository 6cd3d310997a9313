import type { MeteringEngine, Settlement } from '../billing/metering.js';
import { costOfCall } from '../billing/pricing.js';
import type { Logger } from '../http/logger.js';
import type { KeyPrincipal } from '../identity/key-store.js';
import type { ProviderConfig } from './providers.js';
import type { UsageObserver } from './usage.js';

/** Credit admission held for a call, and the lease it came from (null: its own hold row). */
export interface Admission {
  usageId: string;
  holdMicros: number;
  leaseId: string | null;
}

/** A metered call whose upstream answered 2xx: everything its settlement needs. */
export interface MeteredCall {
  key: KeyPrincipal;
  provider: ProviderConfig;
  connectionId: string;
  model: string | null;
  admission: Admission;
  upstreamStatus: number;
  requestId: string | null;
}

/**
 * Bills a call once its response has ended: what the upstream reported it used, priced by
 * billing, or the admission's hold when it reported nothing. Resolves once the bill is durable
 * (in the settlement journal), which the caller's answer waits for; the store settles it in the
 * background and, while the store is away, again until it takes it. Never throws: the caller's
 * response is not broken for bookkeeping.
 *
 * @see docs/billing.md "Settlement journal"
 */
export async function settleCall(
  metering: MeteringEngine,
  logger: Logger,
  call: MeteredCall,
  usage: UsageObserver,
): Promise<void> {
  try {
    await metering.record(settlementOf(call, usage));
  } catch (error) {
    logger.error('metered call could not be recorded', {
      usage_id: call.admission.usageId,
      tenant_id: call.key.tenantId,
      provider: call.provider.slug,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

function settlementOf(call: MeteredCall, usage: UsageObserver): Settlement {
  const reported = usage.finish();
  const quantities = { ...(reported ?? {}), call: 1 };
  const estimated = reported === null;
  const priced = estimated
    ? { total: call.admission.holdMicros, perMeter: {} }
    : costOfCall(call.provider, call.model, quantities);
  return {
    usageId: call.admission.usageId,
    tenantId: call.key.tenantId,
    appId: call.key.appId,
    connectionId: call.connectionId,
    keyId: call.key.keyId,
    provider: call.provider.slug,
    model: call.model,
    quantities,
    meterCosts: priced.perMeter,
    costMicros: priced.total,
    estimated,
    upstreamStatus: call.upstreamStatus,
    requestId: call.requestId,
    holdMicros: call.admission.holdMicros,
    leaseId: call.admission.leaseId,
  };
}
