import type { Kysely } from 'kysely';
import type { Database, LedgerKind } from '../store/database.js';

/** The kinds of the billing history; older ledger kinds read as the one they meant. */
export type TransactionKind = 'purchase' | 'grant' | 'usage' | 'refund' | 'adjustment';

const KIND_OF: Record<LedgerKind, TransactionKind> = {
  purchase: 'purchase',
  reload: 'purchase',
  grant: 'grant',
  usage: 'usage',
  settle: 'usage',
  refund: 'refund',
  adjustment: 'adjustment',
};

export interface Transaction {
  id: string;
  kind: TransactionKind;
  amountMicros: number;
  balanceAfterMicros: number;
  description: string | null;
  createdAt: Date;
}

export interface TransactionPage {
  transactions: Transaction[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  nextCursor: string | null;
}

/**
 * A page of the tenant's ledger, newest first. The cursor is the id of the last entry shown
 * (entry ids only grow), so entries posted while paging never shift a page.
 */
export async function listTransactions(
  db: Kysely<Database>,
  tenantId: string,
  page: { limit: number; before?: number },
): Promise<TransactionPage> {
  let query = db
    .selectFrom('ledger_entries')
    .select(['id', 'kind', 'amount_micros', 'balance_after_micros', 'description', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .orderBy('id', 'desc')
    .limit(page.limit + 1);
  if (page.before !== undefined) query = query.where('id', '<', page.before);
  const rows = await query.execute();
  const shown = rows.slice(0, page.limit);
  return {
    transactions: shown.map((row) => ({
      id: String(row.id),
      kind: KIND_OF[row.kind],
      amountMicros: row.amount_micros,
      balanceAfterMicros: row.balance_after_micros,
      description: row.description,
      createdAt: row.created_at,
    })),
    nextCursor: rows.length > page.limit ? String(shown.at(-1)!.id) : null,
  };
}
