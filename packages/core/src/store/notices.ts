import { sql, type Transaction } from 'kysely';
import type { Database } from './database.js';

/** A NOTIFY to send when a transaction commits: channel and payload. */
export type Notice = [channel: string, payload: string];

/**
 * Sends a transaction's NOTIFYs in one statement (Postgres delivers them only if it commits).
 * Writers that share a transaction collect their notices and send them together.
 */
export async function sendNotices(trx: Transaction<Database>, notices: Notice[]): Promise<void> {
  if (notices.length === 0) return;
  const calls = notices.map(([channel, payload]) => sql`pg_notify(${channel}, ${payload})`);
  await sql`select ${sql.join(calls)}`.execute(trx);
}
