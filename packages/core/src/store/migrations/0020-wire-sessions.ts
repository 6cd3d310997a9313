import { type Kysely, sql } from 'kysely';

/**
 * Sessions of the embedded wire: one row per anonymous cookie (its owner is derived from the
 * cookie's hash, never the cookie itself) and who adopted it (adoption claims the row once, so
 * two first requests of a new user cannot both move the session's rows); and the organization
 * workspace each user switched to.
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
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists wire_org_selections, wire_anonymous_sessions;`.execute(db);
}
