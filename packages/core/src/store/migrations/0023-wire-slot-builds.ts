import { type Kysely, sql } from 'kysely';

/**
 * Builds in flight that target a person's slot (`service_make` with a `slot`), so the slot can say
 * it is being rebuilt while the agent works. A row lives while its build runs and is deleted when
 * the build ends, either way; a row older than the build time limit (a process that died mid-build)
 * counts as gone.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table wire_slot_builds (
      owner text not null,
      slot_id text not null,
      app_id text not null,
      started_at timestamptz not null default now(),
      primary key (owner, slot_id, app_id)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists wire_slot_builds;`.execute(db);
}
