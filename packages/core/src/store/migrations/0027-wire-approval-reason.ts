import { type Kysely, sql } from 'kysely';

/**
 * A denied approval keeps the reason the user gave (the AI SDK's `addToolApprovalResponse`
 * carries one), so the model reads it on whichever instance runs the call.
 *
 * @see docs/wire.md "Approving from useChat"
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table wire_approvals add column reason text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table wire_approvals drop column reason`.execute(db);
}
