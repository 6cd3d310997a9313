import { type Kysely, sql } from 'kysely';

/**
 * Automations of the wire: one record per automation (`atm_...`), with its trigger (a cron
 * schedule in a time zone, or a webhook source) inline. A schedule's `next_run_at` is the claim:
 * a tick fires an occurrence only by moving it from the value it read, so instances racing one
 * tick fire it once.
 *
 * Runs learn where they came from: the automation that started them, the person they answer to
 * (`actor`: the automation's owner, or who asked for a rerun) and the trigger.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table wire_automations (
      id text primary key,
      owner text not null,
      principal jsonb not null,
      name text not null,
      prompt text not null,
      status text not null check (status in ('active', 'paused')),
      trigger_type text not null check (trigger_type in ('schedule', 'webhook')),
      cron text,
      timezone text,
      source text,
      next_run_at timestamptz,
      last_run_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      check ((trigger_type = 'schedule') = (cron is not null and timezone is not null)),
      check ((trigger_type = 'webhook') = (source is not null))
    );
    create index wire_automations_owner_idx on wire_automations (owner, created_at desc, id desc);
    create index wire_automations_due_idx on wire_automations (next_run_at)
      where status = 'active' and trigger_type = 'schedule';
    create index wire_automations_source_idx on wire_automations (source)
      where status = 'active' and trigger_type = 'webhook';

    alter table wire_runs add column automation_id text;
    alter table wire_runs add column actor text;
    alter table wire_runs add column trigger text not null default 'chat'
      check (trigger in ('chat', 'schedule', 'webhook', 'rerun'));
    create index wire_runs_owner_recent_idx on wire_runs (owner, created_at desc, id desc);
    create index wire_runs_actor_recent_idx on wire_runs (actor, created_at desc, id desc);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop index if exists wire_runs_actor_recent_idx;
    drop index if exists wire_runs_owner_recent_idx;
    alter table wire_runs drop column if exists trigger;
    alter table wire_runs drop column if exists actor;
    alter table wire_runs drop column if exists automation_id;
    drop table if exists wire_automations;
  `.execute(db);
}
