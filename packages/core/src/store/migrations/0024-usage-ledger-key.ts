import { type Kysely, sql } from 'kysely';

/**
 * A usage row's `ledger_entry_id` keeps naming its debit without a foreign key. The key could never
 * fail: settlement inserts the ledger entry and the usage row in one transaction, the id comes
 * from that insert, and the ledger refuses updates and deletes. Checking it cost every metered call
 * an index probe and a row lock on the entry (about 5% of the proxy's throughput on the embedded
 * store). The usage row's other keys stay: they carry what deleting a tenant, app, connection or
 * key does to its usage.
 *
 * @see docs/storage.md
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table usage_events drop constraint if exists usage_events_ledger_entry_id_fkey;`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table usage_events
      add constraint usage_events_ledger_entry_id_fkey foreign key (ledger_entry_id) references ledger_entries (id);
  `.execute(db);
}
