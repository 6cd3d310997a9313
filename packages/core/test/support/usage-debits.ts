/**
 * The ledger's usage debits checked against the usage rows they bill: each debit is the sum of
 * the rows naming it, and each row names a debit of its tenant. Shared by the crash and fault
 * suites (no test runner import: child processes load it too).
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../src/store/database.js';

/** Debits and usage rows of the tenant that disagree; empty when the books match. */
export async function mismatchedDebits(db: Kysely<Database>, tenantId: string): Promise<string[]> {
  const { rows } = await sql<{ problem: string }>`
    select 'debit ' || l.id || ': ' || -l.amount_micros || ' for ' || coalesce(sum(u.cost_micros), 0) as problem
    from ledger_entries l left join usage_events u on u.ledger_entry_id = l.id
    where l.tenant_id = ${tenantId} and l.kind = 'usage'
    group by l.id, l.amount_micros
    having -l.amount_micros <> coalesce(sum(u.cost_micros), 0)
    union all
    select 'usage row ' || u.id || ' names no debit' as problem
    from usage_events u
    where u.tenant_id = ${tenantId}
      and not exists (
        select 1 from ledger_entries l
        where l.id = u.ledger_entry_id and l.tenant_id = u.tenant_id and l.kind = 'usage'
      )
  `.execute(db);
  return rows.map((row) => row.problem);
}
