import type { Kysely } from 'kysely';
import { isUuid } from '../../internal/uuid.js';
import type { Database } from '../../store/database.js';
import { postPayment } from './post-payment.js';
import type { PaymentProcessor, PurchaseRequest } from './processor.js';
import { recordPurchase } from './purchases.js';

/** A purchase as its confirmation and result pages show it. */
export interface DevPurchase {
  id: string;
  amountMicros: number;
  returnUrl: string;
  /** Set once its credit landed. */
  completedAt: Date | null;
}

export interface ConfirmedPurchase {
  purchase: DevPurchase;
  balanceAfterMicros: number;
  /** False when the purchase had been confirmed before (nothing was posted this time). */
  applied: boolean;
}

/**
 * The offline processor for development: nothing is charged. `startPurchase` records the
 * purchase and answers the platform page where the signed-in owner confirms it; confirming posts
 * the credit through `postPayment` with the purchase id as the event id, as a processor's webhook
 * would, so confirming twice (or ten times at once) credits once. Refused in production.
 */
export class DevPaymentProcessor implements PaymentProcessor {
  readonly name = 'dev';

  constructor(
    private readonly db: Kysely<Database>,
    /** The confirmation page of a purchase. */
    private readonly pageUrl: (purchaseId: string) => string,
  ) {}

  async startPurchase(request: PurchaseRequest): Promise<{ url: string }> {
    const id = await recordPurchase(this.db, this.name, request);
    return { url: this.pageUrl(id) };
  }

  /** The tenant's dev purchase, or null (unknown, another tenant's, another processor's). */
  async purchase(tenantId: string, id: string): Promise<DevPurchase | null> {
    if (!isUuid(id)) return null;
    const row = await this.db
      .selectFrom('purchases')
      .select(['id', 'amount_micros', 'return_url', 'completed_at'])
      .where('id', '=', id)
      .where('tenant_id', '=', tenantId)
      .where('processor', '=', this.name)
      .executeTakeFirst();
    return row
      ? {
          id: row.id,
          amountMicros: row.amount_micros,
          returnUrl: row.return_url,
          completedAt: row.completed_at,
        }
      : null;
  }

  /** Pays the purchase: posts its credit once and marks it completed; null when it is not the tenant's. */
  async confirm(tenantId: string, id: string): Promise<ConfirmedPurchase | null> {
    const purchase = await this.purchase(tenantId, id);
    if (!purchase) return null;
    let completedAt = purchase.completedAt;
    const result = await postPayment(
      this.db,
      {
        tenantId,
        processor: this.name,
        eventId: id,
        kind: 'purchase',
        amountMicros: purchase.amountMicros,
        description: 'Credit purchase (development processor)',
      },
      async (trx, posted) => {
        if (!posted.applied) return;
        const row = await trx
          .updateTable('purchases')
          .set({ ledger_entry_id: posted.entryId, completed_at: new Date() })
          .where('id', '=', id)
          .returning('completed_at')
          .executeTakeFirstOrThrow();
        completedAt = row.completed_at;
      },
    );
    return {
      purchase: { ...purchase, completedAt },
      balanceAfterMicros: result.balanceAfterMicros,
      applied: result.applied,
    };
  }
}
