import { type Kysely, sql } from 'kysely';

/** Tenants, identity, wallets with an append-only ledger, apps, catalog, connections and keys. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table tenants (
      id uuid primary key default gen_random_uuid(),
      name text not null,
      status text not null default 'active' check (status in ('active', 'suspended')),
      created_at timestamptz not null default now()
    );

    create table users (
      id uuid primary key default gen_random_uuid(),
      idp_subject text not null unique,
      email text,
      name text,
      default_tenant_id uuid references tenants (id) on delete set null,
      created_at timestamptz not null default now()
    );

    create table memberships (
      tenant_id uuid not null references tenants (id) on delete cascade,
      user_id uuid not null references users (id) on delete cascade,
      role text not null check (role in ('owner', 'member', 'viewer')),
      created_at timestamptz not null default now(),
      primary key (tenant_id, user_id)
    );
    create index memberships_user_idx on memberships (user_id);

    create table wallets (
      tenant_id uuid primary key references tenants (id) on delete cascade,
      balance_micros bigint not null default 0,
      updated_at timestamptz not null default now()
    );

    create table ledger_entries (
      id bigint generated always as identity primary key,
      tenant_id uuid not null references tenants (id),
      amount_micros bigint not null,
      kind text not null check (kind in ('reload', 'purchase', 'settle', 'grant', 'usage')),
      idempotency_key text not null,
      balance_after_micros bigint not null,
      description text,
      created_at timestamptz not null default now(),
      unique (tenant_id, idempotency_key)
    );

    -- The ledger is append-only: history is corrected by new entries, never by edits.
    create function ledger_entries_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'ledger_entries is append-only';
    end
    $$;
    create trigger ledger_entries_no_update_or_delete
      before update or delete on ledger_entries
      for each row execute function ledger_entries_append_only();

    create table apps (
      id uuid primary key default gen_random_uuid(),
      tenant_id uuid not null references tenants (id) on delete cascade,
      slug text not null,
      name text not null,
      created_at timestamptz not null default now(),
      unique (tenant_id, slug)
    );

    create table integrations (
      id uuid primary key default gen_random_uuid(),
      provider text not null unique,
      name text not null,
      description text not null default '',
      category text not null default '',
      enabled boolean not null default true,
      default_profile text not null default 'vendo_managed_pool',
      supported_profiles jsonb not null default '[]',
      logo_url text not null default '',
      docs_url text not null default '',
      icon_name text,
      env_bootstrap jsonb not null default '{"vars":[],"restart":"none"}',
      created_at timestamptz not null default now()
    );

    create table connections (
      id uuid primary key default gen_random_uuid(),
      tenant_id uuid not null references tenants (id) on delete cascade,
      provider text not null,
      profile text not null,
      status text not null check (status in ('connected', 'needs_reauth', 'revoked', 'error')),
      display_name text not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index connections_tenant_idx on connections (tenant_id);

    create table api_keys (
      id uuid primary key default gen_random_uuid(),
      tenant_id uuid not null references tenants (id) on delete cascade,
      kind text not null check (kind in ('app', 'connection', 'cli')),
      app_id uuid references apps (id) on delete cascade,
      connection_id uuid references connections (id) on delete cascade,
      user_id uuid references users (id) on delete cascade,
      key_hash text not null unique,
      prefix text not null,
      name text,
      created_at timestamptz not null default now(),
      revoked_at timestamptz,
      last_used_at timestamptz,
      check (kind <> 'app' or app_id is not null),
      check (kind <> 'connection' or connection_id is not null),
      check (kind <> 'cli' or user_id is not null)
    );
    create index api_keys_tenant_idx on api_keys (tenant_id);

    create table sessions (
      id uuid primary key default gen_random_uuid(),
      token_hash text not null unique,
      user_id uuid not null references users (id) on delete cascade,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null
    );

    create table rate_limit_hits (
      bucket text not null,
      window_start timestamptz not null,
      hits integer not null,
      primary key (bucket, window_start)
    );

    create table dev_idp_keys (
      kid text primary key,
      private_jwk jsonb not null,
      public_jwk jsonb not null,
      created_at timestamptz not null default now()
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table if exists dev_idp_keys, rate_limit_hits, sessions, api_keys, connections, integrations,
      apps, ledger_entries, wallets, memberships, users, tenants cascade;
    drop function if exists ledger_entries_append_only();
  `.execute(db);
}
