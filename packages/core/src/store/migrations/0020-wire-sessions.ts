import { type Kysely, sql } from 'kysely';

/**
 * Sessions of the embedded wire: one row per anonymous cookie (its owner is derived from the
 * cookie's hash, never the cookie itself) and who adopted it (adoption claims the row once, so
 * two first requests of a new user cannot both move the session's rows); the organization
 * workspace each user switched to; and text channel bindings (an outside address, such as a
 * phone number, bound to one owner's thread: an address belongs to one binding).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table wire_anonymous_sessions (
      owner text primary key,
      created_at timestamptz not null default now(),
      adopted_by text,
      adopted_at timestamptz
    );

    create table wire_org_selections (
      owner text primary key,
      org_id text not null,
      updated_at timestamptz not null default now()
    );

    create table wire_channel_bindings (
      id text primary key,
      owner text not null,
      channel text not null,
      address text not null,
      thread_id text not null,
      created_at timestamptz not null default now(),
      unique (channel, address)
    );
    create index wire_channel_bindings_owner_idx on wire_channel_bindings (owner, created_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists wire_channel_bindings, wire_org_selections, wire_anonymous_sessions;`.execute(
    db,
  );
}
