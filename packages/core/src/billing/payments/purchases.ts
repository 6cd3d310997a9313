import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { uuidOfText } from '../../internal/uuid.js';
import type { Database } from '../../store/database.js';
import type { PurchaseRequest } from './processor.js';

/**
 * Records a purchase a processor starts (pending until its credit lands); answers its id. A
 * request's retry (the same `retryKey`) answers the purchase its first attempt recorded, so the
 * processor is asked for that purchase's charge again rather than for another.
 */
export async function recordPurchase(
  db: Kysely<Database>,
  processor: string,
  request: PurchaseRequest,
): Promise<string> {
  const id = request.retryKey ? uuidOfText(`purchase:${request.retryKey}`) : randomUUID();
  await db
    .insertInto('purchases')
    .values({
      id,
      tenant_id: request.tenantId,
      processor,
      amount_micros: request.amountMicros,
      created_by: request.userId ?? null,
      return_url: request.returnUrl,
    })
    .onConflict((conflict) => conflict.column('id').doNothing())
    .execute();
  return id;
}
