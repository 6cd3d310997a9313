import { type Kysely, sql } from 'kysely';

/**
 * Connections a host app's own users make through the platform (the wire's `cloud` connections
 * source): each such connection names the host's user (`end_user`), apps list the origins a
 * flow may return the browser to, and each flow in progress is a row the host polls, whose OAuth
 * state is bound to that user instead of a platform user.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table connections add column end_user text;
    create index connections_end_user on connections (tenant_id, end_user) where end_user is not null;

    alter table apps add column callback_origins jsonb not null default '[]';

    create table end_user_flows (
      id text primary key,
      tenant_id uuid not null references tenants (id) on delete cascade,
      app_id uuid not null references apps (id) on delete cascade,
      end_user text not null,
      provider text not null references integrations (provider) on delete cascade,
      status text not null check (status in ('pending', 'connected', 'failed')),
      connection_id uuid references connections (id) on delete set null,
      error text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      expires_at timestamptz not null
    );
    create index end_user_flows_owner on end_user_flows (tenant_id, end_user);

    alter table oauth_states alter column user_id drop not null;
    alter table oauth_states add column end_user text;
    alter table oauth_states add column flow_id text references end_user_flows (id) on delete cascade;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table oauth_states drop column if exists flow_id, drop column if exists end_user;
    drop table if exists end_user_flows;
    alter table apps drop column if exists callback_origins;
    drop index if exists connections_end_user;
    alter table connections drop column if exists end_user;
  `.execute(db);
}
