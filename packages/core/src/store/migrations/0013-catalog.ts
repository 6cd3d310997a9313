import { type Kysely, sql } from 'kysely';

/**
 * The catalog: what each integration is for (`kind`), each tenant's own integration toggles, the
 * tools tenants deploy and their releases (each with the requirement manifest it was published
 * from), and which tool and release an app runs.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table integrations
      add column kind text not null default 'service'
        check (kind in ('service', 'llm_gateway', 'speech_synthesis', 'transcription', 'connector')),
      add column updated_at timestamptz not null default now();

    create table tenant_integrations (
      tenant_id uuid not null references tenants (id) on delete cascade,
      provider text not null references integrations (provider) on delete cascade,
      enabled boolean not null,
      updated_by uuid references users (id) on delete set null,
      updated_at timestamptz not null default now(),
      primary key (tenant_id, provider)
    );

    create table tools (
      id uuid primary key default gen_random_uuid(),
      slug text not null unique check (slug ~ '^[a-z][a-z0-9-]{1,62}[a-z0-9]$'),
      name text not null,
      description text not null default '',
      category text not null default 'other',
      icon_url text,
      auth_mode text not null default 'session',
      source_repo text not null default '',
      enabled boolean not null default true,
      internal boolean not null default false,
      surface_all_connections boolean not null default false,
      owner_tenant_id uuid references tenants (id) on delete cascade,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );

    create table tool_releases (
      id uuid primary key default gen_random_uuid(),
      tool_id uuid not null references tools (id) on delete cascade,
      version text not null check (length(version) between 1 and 64),
      manifest jsonb not null,
      wizard_inputs jsonb not null default '[]',
      wizard_layout jsonb,
      required_integrations jsonb not null default '[]',
      optional_integrations jsonb not null default '[]',
      status text not null default 'active' check (status in ('active', 'superseded', 'withdrawn')),
      published_by uuid references users (id) on delete set null,
      created_at timestamptz not null default now(),
      unique (tool_id, version)
    );
    create unique index tool_releases_one_active on tool_releases (tool_id) where status = 'active';

    alter table apps
      add column tool_id uuid references tools (id) on delete set null,
      add column release_id uuid references tool_releases (id) on delete set null;
    create index apps_tool on apps (tool_id) where tool_id is not null;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table apps drop column if exists release_id, drop column if exists tool_id;
    drop table if exists tool_releases, tools, tenant_integrations;
    alter table integrations drop column if exists updated_at, drop column if exists kind;
  `.execute(db);
}
