import { type Kysely, sql } from 'kysely';

/**
 * Live server instances and what they hold. Each instance keeps a row alive with a heartbeat;
 * holds (a call's credit, a lease) and event-stream slots name the instance that took them, so
 * a dead instance's credit and slots are let go as soon as its heartbeat stops, not when each
 * row's own expiry lapses. `worst_micros` is what a held call can cost at most (null: its hold).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table instances (
      id uuid primary key,
      alive_until timestamptz not null,
      started_at timestamptz not null default now()
    );
    create index instances_alive_idx on instances (alive_until);
    alter table holds add column instance_id uuid;
    alter table holds add column worst_micros bigint check (worst_micros >= 0);
    create index holds_instance_idx on holds (instance_id) where instance_id is not null;
    alter table event_streams add column instance_id uuid;
    create index event_streams_instance_idx on event_streams (instance_id) where instance_id is not null;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table event_streams drop column instance_id;
    alter table holds drop column worst_micros, drop column instance_id;
    drop table instances;
  `.execute(db);
}
