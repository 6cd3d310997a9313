import { type Kysely, sql } from 'kysely';

/** One-time tokens the developer CLI presents to the ssh broker. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table ssh_sessions (
      id uuid primary key default gen_random_uuid(),
      tenant_id uuid not null references tenants (id) on delete cascade,
      app_id uuid not null references apps (id) on delete cascade,
      user_id uuid references users (id) on delete set null,
      key_id uuid references api_keys (id) on delete set null,
      token_hash text not null unique,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      claimed_at timestamptz
    );
    create index ssh_sessions_expires_idx on ssh_sessions (expires_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table ssh_sessions`.execute(db);
}
