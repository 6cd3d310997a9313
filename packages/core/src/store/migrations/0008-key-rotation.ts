import { type Kysely, sql } from 'kysely';

/**
 * A rotated key stays valid until `expires_at` (the overlap its rotation stated), so deployments
 * can switch to the replacement without a gap. Null: valid until revoked.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table api_keys add column expires_at timestamptz`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table api_keys drop column expires_at`.execute(db);
}
