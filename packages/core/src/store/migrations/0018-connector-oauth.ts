import { type Kysely, sql } from 'kysely';

/**
 * Connector OAuth: each connector integration's OAuth client (its secret sealed), the single-use
 * states of authorizations in flight (hashed, expiring, bound to a user and a workspace), and on
 * each connection when its access token expires and who is renewing it, so refreshes are found
 * without opening credentials and never run twice at once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table integration_oauth_clients (
      provider text primary key references integrations (provider) on delete cascade,
      authorize_url text not null,
      token_url text not null,
      revocation_url text,
      client_id text not null,
      client_secret_ciphertext text,
      scopes jsonb not null default '[]',
      authorize_params jsonb not null default '{}',
      pkce boolean not null default true,
      token_auth_method text not null default 'client_secret_basic'
        check (token_auth_method in ('client_secret_basic', 'client_secret_post', 'none')),
      updated_by text,
      updated_at timestamptz not null default now()
    );

    create table oauth_states (
      state_hash text primary key,
      tenant_id uuid not null references tenants (id) on delete cascade,
      user_id uuid not null references users (id) on delete cascade,
      provider text not null references integrations (provider) on delete cascade,
      code_verifier_ciphertext text,
      return_to text,
      app_id uuid references apps (id) on delete cascade,
      connection_id uuid references connections (id) on delete cascade,
      expires_at timestamptz not null,
      created_at timestamptz not null default now()
    );
    create index oauth_states_expiry on oauth_states (expires_at);

    alter table connections
      add column token_expires_at timestamptz,
      add column refresh_claimed_until timestamptz;
    create index connections_token_expiry on connections (token_expires_at)
      where token_expires_at is not null and status = 'connected';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop index if exists connections_token_expiry;
    alter table connections drop column if exists refresh_claimed_until, drop column if exists token_expires_at;
    drop table if exists oauth_states, integration_oauth_clients;
  `.execute(db);
}
