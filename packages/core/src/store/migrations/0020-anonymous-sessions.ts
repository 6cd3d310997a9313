import { type Kysely, sql } from 'kysely';

/**
 * Anonymous sessions of the embedded wire: one row per anonymous cookie (its owner is derived
 * from the cookie's hash, never the cookie itself), and who adopted it. Adoption claims the row
 * once, so two first requests of a new user cannot both move the session's rows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table wire_anonymous_sessions (
      owner text primary key,
      created_at timestamptz not null default now(),
      adopted_by text,
      adopted_at timestamptz
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists wire_anonymous_sessions;`.execute(db);
}
