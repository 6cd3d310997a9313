/**
 * MCP sessions (bound to one door, one subject and one client) and federation nonces. Both live
 * in the store, so any instance can serve any request of a session, and a nonce is spent once
 * across instances.
 *
 * @see MCP "Streamable HTTP" §Session Management; docs/door.md "Sessions"
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../store/database.js';
import { hashSecret, mintSecret, SECRET_PREFIX } from '../secrets.js';

/** A session nobody ended is forgotten this long after it began. */
export const SESSION_MAX_AGE_MS = 30 * 24 * 60 * 60 * 1000;

export interface McpSession {
  subject: string;
  clientId: string;
}

export class DoorSessionStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number,
    /** The door's canonical MCP URL: another door's sessions are unknown here. */
    private readonly resource: string,
  ) {}

  async open(binding: McpSession): Promise<string> {
    const id = mintSecret(SECRET_PREFIX.session);
    await this.db
      .insertInto('door_sessions')
      .values({
        id_hash: hashSecret(id),
        resource: this.resource,
        subject: binding.subject,
        client_id: binding.clientId,
        created_at: new Date(this.now()),
      })
      .execute();
    return id;
  }

  /** The live session's binding, or null (unknown or ended). */
  async get(id: string): Promise<McpSession | null> {
    if (id.length > 200) return null;
    const row = await this.db
      .selectFrom('door_sessions')
      .select(['subject', 'client_id'])
      .where('id_hash', '=', hashSecret(id))
      .where('resource', '=', this.resource)
      .where('ended_at', 'is', null)
      .executeTakeFirst();
    return row ? { subject: row.subject, clientId: row.client_id } : null;
  }

  async end(id: string): Promise<void> {
    await this.db
      .updateTable('door_sessions')
      .set({ ended_at: new Date(this.now()) })
      .where('id_hash', '=', hashSecret(id))
      .where('resource', '=', this.resource)
      .where('ended_at', 'is', null)
      .execute();
  }

  /**
   * Ends every live session of a subject at this door (the principal no longer resolves), or
   * with `clientId` only those with that client (the user disconnected it).
   */
  async endSubject(subject: string, clientId?: string): Promise<void> {
    let sessions = this.db
      .updateTable('door_sessions')
      .set({ ended_at: new Date(this.now()) })
      .where('subject', '=', subject)
      .where('resource', '=', this.resource)
      .where('ended_at', 'is', null);
    if (clientId !== undefined) sessions = sessions.where('client_id', '=', clientId);
    await sessions.execute();
  }

  /** Spends a federation `jti` once; false when it was already spent (a replay). */
  async spendNonce(jti: string, expiresAt: Date): Promise<boolean> {
    const row = await this.db
      .insertInto('door_federation_nonces')
      .values({ jti_hash: hashSecret(jti), expires_at: expiresAt })
      .onConflict((oc) => oc.column('jti_hash').doNothing())
      .returning('jti_hash')
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Deletes spent nonces past their expiry, sessions ended a day ago, and sessions older than
   * `SESSION_MAX_AGE_MS` that nobody ended (clients that went away without a DELETE): a client
   * still using one gets 404 and initializes again, as Streamable HTTP prescribes.
   */
  async sweep(): Promise<void> {
    const now = new Date(this.now());
    await this.db.deleteFrom('door_federation_nonces').where('expires_at', '<', now).execute();
    await this.db
      .deleteFrom('door_sessions')
      .where((eb) =>
        eb.or([
          eb('ended_at', '<', new Date(this.now() - 24 * 60 * 60 * 1000)),
          eb('created_at', '<', new Date(this.now() - SESSION_MAX_AGE_MS)),
        ]),
      )
      .execute();
  }
}
