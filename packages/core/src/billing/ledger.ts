import { type Kysely, sql } from 'kysely';
import type { Database, LedgerKind } from '../store/database.js';

export interface LedgerPosting {
  tenantId: string;
  /** Signed integer micros: positive credits the wallet, negative debits it. */
  amountMicros: number;
  kind: LedgerKind;
  /** Unique per tenant. Posting the same key again changes nothing and returns the first entry. */
  idempotencyKey: string;
  description?: string;
}

export interface LedgerResult {
  entryId: number;
  balanceAfterMicros: number;
  /** False when the idempotency key had been posted before (nothing changed this time). */
  applied: boolean;
}

/**
 * Appends one ledger entry and moves the wallet by the same amount in one transaction, so the
 * wallet balance always equals the sum of the tenant's ledger.
 */
export async function post(db: Kysely<Database>, posting: LedgerPosting): Promise<LedgerResult> {
  if (!Number.isSafeInteger(posting.amountMicros)) {
    throw new RangeError('amountMicros must be a safe integer');
  }
  return db
    .transaction()
    .execute(async (trx) => {
      await trx
        .insertInto('wallets')
        .values({ tenant_id: posting.tenantId })
        .onConflict((oc) => oc.column('tenant_id').doNothing())
        .execute();
      // The wallet row lock orders concurrent postings for one tenant.
      const wallet = await trx
        .updateTable('wallets')
        .set({ balance_micros: sql`balance_micros + ${posting.amountMicros}`, updated_at: sql`now()` })
        .where('tenant_id', '=', posting.tenantId)
        .returning('balance_micros')
        .executeTakeFirstOrThrow();
      const entry = await trx
        .insertInto('ledger_entries')
        .values({
          tenant_id: posting.tenantId,
          amount_micros: posting.amountMicros,
          kind: posting.kind,
          idempotency_key: posting.idempotencyKey,
          balance_after_micros: wallet.balance_micros,
          description: posting.description ?? null,
        })
        .onConflict((oc) => oc.columns(['tenant_id', 'idempotency_key']).doNothing())
        .returning('id')
        .executeTakeFirst();
      if (entry) return { entryId: entry.id, balanceAfterMicros: wallet.balance_micros, applied: true };
      // Already posted: undo the wallet move by aborting, then report the original entry.
      throw new AlreadyPosted();
    })
    .catch(async (error: unknown) => {
      if (!(error instanceof AlreadyPosted)) throw error;
      const first = await db
        .selectFrom('ledger_entries')
        .select(['id', 'balance_after_micros'])
        .where('tenant_id', '=', posting.tenantId)
        .where('idempotency_key', '=', posting.idempotencyKey)
        .executeTakeFirstOrThrow();
      return { entryId: first.id, balanceAfterMicros: first.balance_after_micros, applied: false };
    });
}

class AlreadyPosted extends Error {
  override name = 'AlreadyPosted';
}

/** The wallet balance in micros; a tenant without a wallet has 0. */
export async function balanceMicros(db: Kysely<Database>, tenantId: string): Promise<number> {
  const row = await db
    .selectFrom('wallets')
    .select('balance_micros')
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row?.balance_micros ?? 0;
}

/** Micros to USD rounded to cents (half away from zero), for the legacy `_usd` fields. */
export function microsToUsd(micros: number): number {
  const cents = Math.sign(micros) * Math.round(Math.abs(micros) / 10_000);
  return cents / 100 + 0;
}
