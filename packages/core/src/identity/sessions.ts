import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { hashSecret } from './keys.js';

export const SESSION_COOKIE = 'service_session';
/** A dashboard session lasts a week; signing in again starts a new one. */
export const SESSION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export interface SessionUser {
  sessionId: string;
  userId: string;
  /** The identity provider's subject (the raw IdP user id). */
  subject: string;
  email: string | null;
  tenantId: string | null;
}

/** Browser sessions: a random cookie value, stored only as its SHA-256 hash. */
export class SessionStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a session; returns the cookie value (shown once, stored hashed). */
  async create(userId: string): Promise<{ token: string; expiresAt: Date }> {
    const token = randomBytes(32).toString('base64url');
    const expiresAt = new Date(this.now() + SESSION_TTL_MS);
    await this.db
      .insertInto('sessions')
      .values({ token_hash: hashSecret(token), user_id: userId, expires_at: expiresAt })
      .execute();
    return { token, expiresAt };
  }

  /** The signed-in user of a cookie value, or null when unknown or expired. */
  async resolve(token: string | undefined): Promise<SessionUser | null> {
    if (!token || token.length > 256) return null;
    const row = await this.db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select([
        'sessions.id',
        'users.id as user_id',
        'users.idp_subject',
        'users.email',
        'users.default_tenant_id',
      ])
      .where('sessions.token_hash', '=', hashSecret(token))
      .where('sessions.expires_at', '>', new Date(this.now()))
      .executeTakeFirst();
    if (!row) return null;
    return {
      sessionId: row.id,
      userId: row.user_id,
      subject: row.idp_subject,
      email: row.email,
      tenantId: row.default_tenant_id,
    };
  }

  /** Ends a session. Unknown values are ignored. */
  async destroy(token: string | undefined): Promise<void> {
    if (!token) return;
    await this.db.deleteFrom('sessions').where('token_hash', '=', hashSecret(token)).execute();
  }
}
