import { type Kysely, sql } from 'kysely';

/**
 * A host's user's sign-in cancelled while in progress is `revoked`, as its `DELETE` answers,
 * rather than a `failed` flow that a later read would disagree with.
 *
 * @see docs/api/runtime.md "A host app's users' connections"
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table end_user_flows drop constraint end_user_flows_status_check;
    alter table end_user_flows add constraint end_user_flows_status_check
      check (status in ('pending', 'connected', 'failed', 'revoked'));
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    update end_user_flows set status = 'failed', error = 'Cancelled' where status = 'revoked';
    alter table end_user_flows drop constraint end_user_flows_status_check;
    alter table end_user_flows add constraint end_user_flows_status_check
      check (status in ('pending', 'connected', 'failed'));
  `.execute(db);
}
