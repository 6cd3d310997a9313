import { type Kysely, sql } from 'kysely';

/**
 * The Stripe customer of each tenant, created at its first Stripe use, with its auto-reload
 * settings (both amounts set, or neither) and when the auto-reload in flight, if any, started.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table stripe_customers (
      tenant_id uuid primary key references tenants (id) on delete cascade,
      customer_id text not null unique,
      auto_reload_threshold_micros bigint check (auto_reload_threshold_micros > 0),
      auto_reload_amount_micros bigint check (auto_reload_amount_micros > 0),
      auto_reload_started_at timestamptz,
      created_at timestamptz not null default now(),
      check ((auto_reload_threshold_micros is null) = (auto_reload_amount_micros is null))
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists stripe_customers`.execute(db);
}
