import { type Kysely, sql } from 'kysely';

/**
 * Deployments: the runnable artifact of a tool release, each deployed app's run state (which
 * release, whether it should be running, its App Key sealed so a restart can hand it over again,
 * its wizard inputs), and the secrets set on an app (sealed, read only to start the app).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table tool_releases add column artifact jsonb;

    create table deployments (
      app_id uuid primary key references apps (id) on delete cascade,
      tenant_id uuid not null references tenants (id) on delete cascade,
      release_id uuid references tool_releases (id) on delete set null,
      desired_state text not null default 'running' check (desired_state in ('running', 'stopped')),
      app_key_id uuid not null,
      app_key_sealed text not null,
      inputs jsonb not null default '{}',
      deployed_by uuid references users (id) on delete set null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index deployments_running on deployments (desired_state) where desired_state = 'running';

    create table app_secrets (
      app_id uuid not null references apps (id) on delete cascade,
      tenant_id uuid not null references tenants (id) on delete cascade,
      name text not null check (name ~ '^[A-Z][A-Z0-9_]{0,63}$'),
      value_sealed text not null,
      updated_at timestamptz not null default now(),
      primary key (app_id, name)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table if exists app_secrets, deployments;
    alter table tool_releases drop column if exists artifact;
  `.execute(db);
}
