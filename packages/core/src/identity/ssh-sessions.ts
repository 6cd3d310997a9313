import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isUuid } from '../internal/uuid.js';
import type { Database } from '../store/database.js';
import { hashSecret } from './keys.js';

/** Every ssh session token starts with this, so a leaked one is recognisable in a scan. */
export const SSH_TOKEN_PREFIX = 'service_ssh_';
/** A session token must be presented to the broker within a minute of being issued. */
export const SSH_TOKEN_TTL_MS = 60_000;

const TOKEN_PATTERN = /^service_ssh_[A-Za-z0-9_-]{43}$/;

export interface StartedSshSession {
  sessionId: string;
  /** One-time token for the broker; returned once, stored only as its hash. */
  token: string;
  expiresAt: Date;
}

export interface StartSshSessionInput {
  tenantId: string;
  appId: string;
  userId: string | null;
  keyId: string;
}

/** What the broker learns when it claims a token: which deployment to open a shell in. */
export interface ClaimedSshSession {
  sessionId: string;
  tenantId: string;
  appId: string;
  appSlug: string;
  userId: string | null;
  email: string | null;
}

/**
 * One-time tokens that let the ssh broker open a shell in a deployment. The platform issues a
 * token to an authenticated CLI; the broker claims it exactly once, within a minute.
 *
 * @see docs/cli.md "ssh"
 */
export class SshSessionStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The tenant's deployment a shell is asked for, by slug or id, or null. Only that tenant is
   * searched: another tenant's deployment reads as not found.
   */
  async findDeployment(tenantId: string, name: string): Promise<{ id: string; slug: string } | null> {
    const app = await this.db
      .selectFrom('apps')
      .select(['id', 'slug'])
      .where('tenant_id', '=', tenantId)
      .where((eb) =>
        isUuid(name) ? eb.or([eb('id', '=', name), eb('slug', '=', name)]) : eb('slug', '=', name),
      )
      .executeTakeFirst();
    return app ?? null;
  }

  async start(input: StartSshSessionInput): Promise<StartedSshSession> {
    const token = SSH_TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const expiresAt = new Date(this.now() + SSH_TOKEN_TTL_MS);
    const row = await this.db
      .insertInto('ssh_sessions')
      .values({
        tenant_id: input.tenantId,
        app_id: input.appId,
        user_id: input.userId,
        key_id: input.keyId,
        token_hash: hashSecret(token),
        expires_at: expiresAt,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { sessionId: row.id, token, expiresAt };
  }

  /**
   * Claims a token: the first claim of a live token wins (one atomic update), every later,
   * expired or unknown one gets null, and so does one whose CLI key has been revoked since.
   */
  async claim(token: string): Promise<ClaimedSshSession | null> {
    if (!TOKEN_PATTERN.test(token)) return null;
    const now = new Date(this.now());
    const claimed = await this.db
      .updateTable('ssh_sessions')
      .set({ claimed_at: now })
      .where('token_hash', '=', hashSecret(token))
      .where('claimed_at', 'is', null)
      .where('expires_at', '>', now)
      // A key revoked (service logout, a newer login) or rotated out since the token was issued takes it along.
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('api_keys')
            .select('api_keys.id')
            .whereRef('api_keys.id', '=', 'ssh_sessions.key_id')
            .where('api_keys.revoked_at', 'is', null)
            // A rotated key past its overlap is as dead as a revoked one.
            .where((eb) =>
              eb.or([eb('api_keys.expires_at', 'is', null), eb('api_keys.expires_at', '>', now)]),
            ),
        ),
      )
      .returning(['id', 'tenant_id', 'app_id', 'user_id'])
      .executeTakeFirst();
    if (!claimed) return null;
    const [app, user] = await Promise.all([
      this.db
        .selectFrom('apps')
        .select('slug')
        .where('id', '=', claimed.app_id)
        .where('tenant_id', '=', claimed.tenant_id)
        .executeTakeFirst(),
      claimed.user_id
        ? this.db.selectFrom('users').select('email').where('id', '=', claimed.user_id).executeTakeFirst()
        : undefined,
    ]);
    if (!app) return null;
    return {
      sessionId: claimed.id,
      tenantId: claimed.tenant_id,
      appId: claimed.app_id,
      appSlug: app.slug,
      userId: claimed.user_id,
      email: user?.email ?? null,
    };
  }

  /** Deletes sessions that expired before `before`; claimed or not, they can never be used again. */
  async sweep(before: Date): Promise<void> {
    await this.db.deleteFrom('ssh_sessions').where('expires_at', '<', before).execute();
  }
}
