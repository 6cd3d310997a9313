import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../store/database.js';
import { applyPosting, type LedgerResult } from '../ledger.js';

/** A processor's money event: a purchase credits, a refund or dispute debits. */
export interface PaymentEvent {
  tenantId: string;
  /** The processor's name (`PaymentProcessor.name`). */
  processor: string;
  /** The processor's id of the event; unique per processor. */
  eventId: string;
  kind: 'purchase' | 'refund' | 'adjustment';
  /** Signed micros: positive for a purchase, negative for a refund; an adjustment may be either. */
  amountMicros: number;
  description?: string;
}

/**
 * Posts a processor's event to the tenant's wallet ledger, once: the ledger entry is keyed by the
 * processor and its event id (unique in the store), so a replay answers the first entry and posts
 * nothing (`applied: false`). `alongside` runs in the same transaction, after the posting (the
 * processor marks its own record there), so both land or neither does.
 */
export async function postPayment(
  db: Kysely<Database>,
  event: PaymentEvent,
  alongside?: (trx: Transaction<Database>, result: LedgerResult) => Promise<void>,
): Promise<LedgerResult> {
  const sign = Math.sign(event.amountMicros);
  const expected = { purchase: 1, refund: -1, adjustment: sign }[event.kind];
  if (!Number.isSafeInteger(event.amountMicros) || sign === 0 || sign !== expected) {
    throw new RangeError(
      `A ${event.kind} must be a whole, ${event.kind === 'refund' ? 'negative' : 'non-zero'} amount`,
    );
  }
  return db.transaction().execute(async (trx) => {
    const result = await applyPosting(trx, {
      tenantId: event.tenantId,
      amountMicros: event.amountMicros,
      kind: event.kind,
      idempotencyKey: paymentKey(event.processor, event.eventId),
      description: event.description,
    });
    await alongside?.(trx, result);
    return result;
  });
}

/** The ledger idempotency key of a processor's event. */
export function paymentKey(processor: string, eventId: string): string {
  return `payment:${processor}:${eventId}`;
}
