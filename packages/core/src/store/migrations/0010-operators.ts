import { type Kysely, sql } from 'kysely';

/**
 * The audit trail of platform operators: every credit grant, suspension and resumption of a
 * tenant, with who did it, when and why. Append-only, like the ledger.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table operator_actions (
      id bigint generated always as identity primary key,
      tenant_id uuid not null references tenants (id) on delete cascade,
      action text not null check (action in ('grant', 'suspend', 'resume')),
      operator text not null,
      reason text,
      amount_micros bigint,
      ledger_entry_id bigint references ledger_entries (id),
      created_at timestamptz not null default now()
    );
    create index operator_actions_tenant_idx on operator_actions (tenant_id, id desc);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists operator_actions`.execute(db);
}
