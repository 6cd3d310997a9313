import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isUuid } from '../internal/uuid.js';
import type { Database, MembershipRole } from '../store/database.js';
import { hashSecret } from './keys.js';
import { WorkspaceError } from './workspaces.js';

/** An invitation is good for a week: long enough to be read, short enough to be forgotten. */
export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export interface Invitation {
  id: string;
  tenantId: string;
  email: string;
  role: MembershipRole;
  createdAt: Date;
  expiresAt: Date;
}

/** A new invitation and its token (the accept link's secret, shown this once). */
export interface IssuedInvitation {
  invitation: Invitation;
  token: string;
}

/** A pending invitation as owners list it: with who made it (null once their account is gone). */
export interface PendingInvitation extends Invitation {
  invitedBy: { userId: string; email: string | null } | null;
}

/** What the accept page shows before the invitee accepts. */
export interface InvitationPreview extends Invitation {
  workspaceName: string;
}

/** The invitations columns `invitation()` reads, selected alike wherever one is listed or previewed. */
const INVITATION_COLUMNS = [
  'invitations.id',
  'invitations.tenant_id',
  'invitations.email',
  'invitations.role',
  'invitations.created_at',
  'invitations.expires_at',
] as const;

const notValid = () =>
  new WorkspaceError(
    404,
    'This invitation is not valid: it may have expired, been used or been withdrawn',
    'NOT_FOUND',
  );

/**
 * Invitations into a workspace by email: single use, expiring after `INVITATION_TTL_MS`, and
 * accepted only by a user signed in with the invited email. The token is stored as its SHA-256
 * hash. A new invitation to the same email withdraws the ones still pending, so only the latest
 * link works.
 */
export class Invitations {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Invites `email` into the workspace with `role` (409 when they are already a member). */
  async create(
    tenantId: string,
    input: { email: string; role: MembershipRole; invitedBy: string },
  ): Promise<IssuedInvitation> {
    const email = input.email.toLowerCase();
    const member = await this.db
      .selectFrom('memberships')
      .innerJoin('users', 'users.id', 'memberships.user_id')
      .select('users.id')
      .where('memberships.tenant_id', '=', tenantId)
      .where((eb) => eb(eb.fn('lower', ['users.email']), '=', email))
      .executeTakeFirst();
    if (member) throw new WorkspaceError(409, `${email} is already a member of this workspace`, 'CONFLICT');
    const token = randomBytes(32).toString('base64url');
    const now = new Date(this.now());
    const row = await this.db.transaction().execute(async (trx) => {
      await this.#pending(trx, tenantId).where('email', '=', email).set({ withdrawn_at: now }).execute();
      return trx
        .insertInto('invitations')
        .values({
          tenant_id: tenantId,
          email,
          role: input.role,
          token_hash: hashSecret(token),
          invited_by: input.invitedBy,
          created_at: now,
          expires_at: new Date(now.getTime() + INVITATION_TTL_MS),
        })
        .returning(['id', 'tenant_id', 'email', 'role', 'created_at', 'expires_at'])
        .executeTakeFirstOrThrow();
    });
    return { invitation: invitation(row), token };
  }

  /** The workspace's invitations not yet accepted, withdrawn or expired, newest first. */
  async pending(tenantId: string): Promise<PendingInvitation[]> {
    const rows = await this.db
      .selectFrom('invitations')
      .leftJoin('users', 'users.id', 'invitations.invited_by')
      .select([...INVITATION_COLUMNS, 'invitations.invited_by', 'users.email as inviter_email'])
      .where('invitations.tenant_id', '=', tenantId)
      .where('invitations.accepted_at', 'is', null)
      .where('invitations.withdrawn_at', 'is', null)
      .where('invitations.expires_at', '>', new Date(this.now()))
      .orderBy('invitations.created_at', 'desc')
      .execute();
    return rows.map((row) => ({
      ...invitation(row),
      invitedBy: row.invited_by ? { userId: row.invited_by, email: row.inviter_email } : null,
    }));
  }

  /** Withdraws a pending invitation: its link stops working (404 when there is none such). */
  async withdraw(tenantId: string, id: string): Promise<void> {
    if (!isUuid(id)) throw new WorkspaceError(404, 'Invitation not found', 'NOT_FOUND');
    const result = await this.#pending(this.db, tenantId)
      .where('id', '=', id)
      .set({ withdrawn_at: new Date(this.now()) })
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw new WorkspaceError(404, 'Invitation not found', 'NOT_FOUND');
  }

  /** The invitation of an accept link, while it can still be accepted (404 otherwise). */
  async preview(token: string): Promise<InvitationPreview> {
    const row = await this.db
      .selectFrom('invitations')
      .innerJoin('tenants', 'tenants.id', 'invitations.tenant_id')
      .select([...INVITATION_COLUMNS, 'tenants.name'])
      .where('invitations.token_hash', '=', hashSecret(token))
      .where('invitations.accepted_at', 'is', null)
      .where('invitations.withdrawn_at', 'is', null)
      .where('invitations.expires_at', '>', new Date(this.now()))
      .executeTakeFirst();
    if (!row) throw notValid();
    return { ...invitation(row), workspaceName: row.name };
  }

  /**
   * The workspace of the accept link's invitation when `userId` has accepted it, else null: a
   * reload or Back after accepting leads the invitee to the welcome again, not to a refusal.
   */
  async acceptedBy(token: string, userId: string): Promise<string | null> {
    const row = await this.db
      .selectFrom('invitations')
      .select('tenant_id')
      .where('token_hash', '=', hashSecret(token))
      .where('accepted_by', '=', userId)
      .executeTakeFirst();
    return row?.tenant_id ?? null;
  }

  /**
   * Accepts an invitation for the signed-in user: claimed atomically (single use), refused (403)
   * to a user signed in with another email. The user joins with the invited role (a member
   * already keeps their role) and the workspace becomes their current one.
   */
  async accept(token: string, user: { userId: string; email: string | null }): Promise<InvitationPreview> {
    const preview = await this.preview(token);
    if (user.email?.toLowerCase() !== preview.email) {
      throw new WorkspaceError(
        403,
        `This invitation is for ${preview.email}: sign in with that email to accept it`,
        'FORBIDDEN',
      );
    }
    await this.db.transaction().execute(async (trx) => {
      const now = new Date(this.now());
      const claimed = await trx
        .updateTable('invitations')
        .set({ accepted_at: now, accepted_by: user.userId })
        .where('id', '=', preview.id)
        .where('accepted_at', 'is', null)
        .where('withdrawn_at', 'is', null)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      if (claimed.numUpdatedRows === 0n) throw notValid();
      await trx
        .insertInto('memberships')
        .values({ tenant_id: preview.tenantId, user_id: user.userId, role: preview.role })
        .onConflict((oc) => oc.columns(['tenant_id', 'user_id']).doNothing())
        .execute();
      await trx
        .updateTable('users')
        .set({ default_tenant_id: preview.tenantId })
        .where('id', '=', user.userId)
        .execute();
    });
    return preview;
  }

  #pending(db: Kysely<Database>, tenantId: string) {
    return db
      .updateTable('invitations')
      .where('tenant_id', '=', tenantId)
      .where('accepted_at', 'is', null)
      .where('withdrawn_at', 'is', null);
  }
}

function invitation(row: {
  id: string;
  tenant_id: string;
  email: string;
  role: MembershipRole;
  created_at: Date;
  expires_at: Date;
}): Invitation {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    email: row.email,
    role: row.role,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}
