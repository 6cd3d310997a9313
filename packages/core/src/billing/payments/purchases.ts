import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../store/database.js';
import type { PurchaseRequest } from './processor.js';

/** Records a purchase a processor starts (pending until its credit lands); answers its id. */
export async function recordPurchase(
  db: Kysely<Database>,
  processor: string,
  request: PurchaseRequest,
): Promise<string> {
  const id = randomUUID();
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
    .execute();
  return id;
}
