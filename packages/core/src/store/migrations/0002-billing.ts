import { type Kysely, sql } from 'kysely';

/**
 * Billing engine, metering proxy, runtime connections and the per-app event log.
 *
 * @see docs/storage.md
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- Each app numbers its events; the counter row also orders concurrent emitters of one app.
    alter table apps add column event_seq bigint not null default 0;

    alter table connections
      add column metadata jsonb not null default '{}',
      add column credential_ciphertext text,
      add column error_message text,
      add column setup_url text,
      add column connected_at timestamptz,
      add column exclusive boolean not null default false;

    -- Apps bound to connections: an App Key reaches a provider only through a binding.
    create table app_connections (
      app_id uuid not null references apps (id) on delete cascade,
      connection_id uuid not null references connections (id) on delete cascade,
      tenant_id uuid not null references tenants (id) on delete cascade,
      created_at timestamptz not null default now(),
      primary key (app_id, connection_id)
    );
    create index app_connections_connection_idx on app_connections (connection_id);

    -- Upstream providers behind the metering proxy, with their managed-pool credential.
    create table providers (
      slug text primary key,
      upstream_url text not null,
      dialect text not null check (dialect in ('openai', 'anthropic', 'per_call')),
      auth_header text not null default 'authorization',
      auth_scheme text not null default 'Bearer',
      credential_ciphertext text,
      free_routes jsonb not null default '[]',
      hold_micros bigint not null default 10000 check (hold_micros >= 0),
      margin_percent numeric(9, 4) check (margin_percent >= 0),
      enabled boolean not null default true,
      created_at timestamptz not null default now()
    );

    -- Unit prices in micros (fractions allowed: a token may cost 0.15 micros). model '' = any.
    create table meter_rates (
      provider text not null references providers (slug) on delete cascade,
      meter text not null check (meter in ('call', 'input_tokens', 'output_tokens')),
      model text not null default '',
      unit_price_micros numeric(24, 12) not null check (unit_price_micros >= 0),
      public boolean not null default false,
      primary key (provider, meter, model)
    );

    -- Credit held by metered calls in flight; settled (deleted) in the transaction that debits.
    create table holds (
      id uuid primary key,
      tenant_id uuid not null references tenants (id) on delete cascade,
      app_id uuid references apps (id) on delete cascade,
      amount_micros bigint not null check (amount_micros >= 0),
      expires_at timestamptz not null,
      created_at timestamptz not null default now()
    );
    create index holds_tenant_idx on holds (tenant_id, expires_at);
    create index holds_app_idx on holds (app_id) where app_id is not null;

    create table usage_events (
      id uuid primary key,
      tenant_id uuid not null references tenants (id) on delete cascade,
      app_id uuid references apps (id) on delete set null,
      connection_id uuid references connections (id) on delete set null,
      key_id uuid references api_keys (id) on delete set null,
      provider text not null,
      model text,
      quantities jsonb not null,
      meter_costs jsonb not null default '{}',
      cost_micros bigint not null check (cost_micros >= 0),
      ledger_entry_id bigint not null references ledger_entries (id),
      upstream_status integer,
      estimated boolean not null default false,
      request_id text,
      created_at timestamptz not null default now()
    );
    create index usage_events_tenant_idx on usage_events (tenant_id, created_at);
    create index usage_events_app_idx on usage_events (app_id, created_at);

    create table spend_caps (
      app_id uuid primary key references apps (id) on delete cascade,
      tenant_id uuid not null references tenants (id) on delete cascade,
      daily_micros bigint check (daily_micros > 0),
      monthly_micros bigint check (monthly_micros > 0),
      warn_pcts jsonb not null default '[50, 80]',
      updated_at timestamptz not null default now()
    );

    -- Settled spend per app and UTC window, kept beside the ledger for cap checks.
    create table app_spend (
      app_id uuid not null references apps (id) on delete cascade,
      period text not null check (period in ('daily', 'monthly')),
      period_start date not null,
      spent_micros bigint not null default 0,
      primary key (app_id, period, period_start)
    );

    -- Cap notices sent, so each warning threshold and each trip is announced once per window.
    create table cap_notices (
      app_id uuid not null references apps (id) on delete cascade,
      period text not null,
      period_start date not null,
      notice text not null,
      created_at timestamptz not null default now(),
      primary key (app_id, period, period_start, notice)
    );

    -- The per-app event log: the last 100 events of each app, for Last-Event-ID replay.
    create table app_events (
      app_id uuid not null references apps (id) on delete cascade,
      seq bigint not null,
      kind text not null,
      payload jsonb not null,
      created_at timestamptz not null default now(),
      primary key (app_id, seq)
    );

    -- Open event streams, counted across instances; a crashed instance's rows expire.
    create table event_streams (
      id uuid primary key,
      app_id uuid not null references apps (id) on delete cascade,
      expires_at timestamptz not null
    );
    create index event_streams_app_idx on event_streams (app_id, expires_at);

    create table idempotency_records (
      tenant_id uuid not null references tenants (id) on delete cascade,
      scope text not null,
      key text not null,
      request_hash text not null,
      status integer not null,
      body text not null,
      created_at timestamptz not null default now(),
      primary key (tenant_id, scope, key)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table if exists idempotency_records, event_streams, app_events, cap_notices, app_spend,
      spend_caps, usage_events, holds, meter_rates, providers, app_connections cascade;
    alter table connections drop column metadata, drop column credential_ciphertext,
      drop column error_message, drop column setup_url, drop column connected_at, drop column exclusive;
    alter table apps drop column event_seq;
  `.execute(db);
}
