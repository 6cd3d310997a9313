import { type Kysely, sql } from 'kysely';

/** The Stripe customer of each tenant, created at its first Stripe purchase. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table stripe_customers (
      tenant_id uuid primary key references tenants (id) on delete cascade,
      customer_id text not null unique,
      created_at timestamptz not null default now()
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists stripe_customers`.execute(db);
}
