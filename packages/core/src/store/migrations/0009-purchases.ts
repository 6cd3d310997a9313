import { type Kysely, sql } from 'kysely';

/**
 * Credit bought through a payment processor. The ledger gains the kinds of negative corrections
 * (`refund`, `adjustment`) and an index for paging its history; `purchases` holds the purchases a processor started and whether
 * their credit landed (the ledger entry it posted).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table ledger_entries drop constraint ledger_entries_kind_check;
    alter table ledger_entries add constraint ledger_entries_kind_check
      check (kind in ('reload', 'purchase', 'settle', 'grant', 'usage', 'refund', 'adjustment'));
    -- The billing history pages a tenant's entries newest first.
    create index ledger_entries_tenant_id_idx on ledger_entries (tenant_id, id);

    create table purchases (
      id uuid primary key default gen_random_uuid(),
      tenant_id uuid not null references tenants (id) on delete cascade,
      processor text not null,
      amount_micros bigint not null check (amount_micros > 0),
      created_by uuid references users (id) on delete set null,
      return_url text not null,
      ledger_entry_id bigint references ledger_entries (id),
      created_at timestamptz not null default now(),
      completed_at timestamptz
    );
    create index purchases_tenant_idx on purchases (tenant_id, created_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table purchases;
    drop index ledger_entries_tenant_id_idx;
    alter table ledger_entries drop constraint ledger_entries_kind_check;
    alter table ledger_entries add constraint ledger_entries_kind_check
      check (kind in ('reload', 'purchase', 'settle', 'grant', 'usage'));
  `.execute(db);
}
