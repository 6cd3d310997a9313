import { createHash, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
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
  const id = request.retryKey ? uuidOf(`purchase:${request.retryKey}`) : randomUUID();
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

/** A UUID read off a SHA-256 of `text` (version 8, RFC 9562's custom layout): the same text, the same id. */
function uuidOf(text: string): string {
  const hex = createHash('sha256').update(text).digest('hex');
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
