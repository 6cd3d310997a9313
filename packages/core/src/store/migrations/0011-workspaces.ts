import { type Kysely, sql } from 'kysely';

/**
 * Invitations into a workspace: single use, expiring, addressed to one email. The token in the
 * accept link is stored only as its SHA-256 hash.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table invitations (
      id uuid primary key default gen_random_uuid(),
      tenant_id uuid not null references tenants (id) on delete cascade,
      email text not null,
      role text not null check (role in ('owner', 'member', 'viewer')),
      token_hash text not null unique,
      invited_by uuid references users (id) on delete set null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      accepted_at timestamptz,
      accepted_by uuid references users (id) on delete set null,
      withdrawn_at timestamptz
    );
    create index invitations_tenant_idx on invitations (tenant_id, created_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table invitations`.execute(db);
}
