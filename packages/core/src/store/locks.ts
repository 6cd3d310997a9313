import { sql, type Transaction } from 'kysely';

/**
 * Takes a lock on `key` held until the transaction ends, so transactions acting on the same key
 * (an app's stream slots, a tenant's managed connection) take turns, on any instance. PGlite and
 * PostgreSQL both take it; a key is hashed to the lock's 32-bit number, so two keys may share one
 * (they then wait on each other, never more).
 */
export async function lockUntilCommit<DB>(trx: Transaction<DB>, key: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${key}))`.execute(trx);
}
