import type { Kysely, Transaction } from 'kysely';
import { isUuid } from '../internal/uuid.js';
import type { Database, MembershipRole } from '../store/database.js';
import { sendNotices } from '../store/notices.js';
import { type KeyStore, keyNotices } from './key-store.js';
import { WorkspaceError } from './workspaces.js';

export interface Member {
  userId: string;
  email: string | null;
  name: string | null;
  role: MembershipRole;
  joinedAt: Date;
}

const noSuchMember = () => new WorkspaceError(404, 'Member not found', 'NOT_FOUND');
const lastOwner = () =>
  new WorkspaceError(409, 'A workspace needs an owner: make someone else owner first', 'CONFLICT');

/**
 * The people of a workspace and their roles. Every change is made under the workspace row's lock,
 * so two owners demoting or removing each other at once cannot leave it without an owner.
 */
export class Members {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly keys: KeyStore,
  ) {}

  /** The workspace's members, owners first, then by when they joined. */
  async list(tenantId: string): Promise<Member[]> {
    const rows = await this.#members(this.db, tenantId).execute();
    const rank: Record<MembershipRole, number> = { owner: 0, member: 1, viewer: 2 };
    return rows
      .map(member)
      .sort((a, b) => rank[a.role] - rank[b.role] || a.joinedAt.getTime() - b.joinedAt.getTime());
  }

  /**
   * Gives a member another role; demoting the last owner is refused (409). A member made a viewer
   * loses the keys a viewer could not have made: their CLI keys of the workspace and the
   * Connection Keys they minted, as on removal (viewers only read; a key spends credit). An
   * owner made member or viewer has their pending invitations withdrawn (only owners invite).
   */
  async setRole(tenantId: string, userId: string, role: MembershipRole): Promise<Member> {
    const { changed, revoked } = await this.db.transaction().execute(async (trx) => {
      const current = await this.#locked(trx, tenantId, userId);
      if (current.role === 'owner' && role !== 'owner') await this.#keepAnOwner(trx, tenantId);
      await trx
        .updateTable('memberships')
        .set({ role })
        .where('tenant_id', '=', tenantId)
        .where('user_id', '=', userId)
        .execute();
      // Only owners invite: one who is no longer an owner stops vouching for those they invited.
      if (role !== 'owner') await this.#withdrawInvitations(trx, tenantId, userId);
      const revoked = role === 'viewer' ? await this.#revokeKeys(trx, tenantId, userId) : [];
      return { changed: { ...current, role }, revoked };
    });
    this.keys.forget(revoked);
    return changed;
  }

  /**
   * Takes a member out of the workspace; removing the last owner is refused (409). Their CLI keys
   * of the workspace, and the Connection Keys they minted, are revoked with it, the invitations
   * they made that are still pending are withdrawn, and a user whose current workspace this was
   * moves to another of theirs (or to none).
   */
  async remove(tenantId: string, userId: string): Promise<void> {
    const revoked = await this.db.transaction().execute(async (trx) => {
      const current = await this.#locked(trx, tenantId, userId);
      if (current.role === 'owner') await this.#keepAnOwner(trx, tenantId);
      await trx
        .deleteFrom('memberships')
        .where('tenant_id', '=', tenantId)
        .where('user_id', '=', userId)
        .execute();
      const ids = await this.#revokeKeys(trx, tenantId, userId);
      await this.#withdrawInvitations(trx, tenantId, userId);
      const next = await trx
        .selectFrom('memberships')
        .select('tenant_id')
        .where('user_id', '=', userId)
        .orderBy('created_at')
        .executeTakeFirst();
      await trx
        .updateTable('users')
        .set({ default_tenant_id: next?.tenant_id ?? null })
        .where('id', '=', userId)
        .where('default_tenant_id', '=', tenantId)
        .execute();
      return ids;
    });
    this.keys.forget(revoked);
  }

  /**
   * Withdraws the invitations the member made that are still pending: an invitation stands on its
   * inviter's authority, which ends when they stop being an owner or leave.
   */
  async #withdrawInvitations(trx: Transaction<Database>, tenantId: string, userId: string): Promise<void> {
    await trx
      .updateTable('invitations')
      .set({ withdrawn_at: new Date() })
      .where('tenant_id', '=', tenantId)
      .where('invited_by', '=', userId)
      .where('accepted_at', 'is', null)
      .where('withdrawn_at', 'is', null)
      .execute();
  }

  /**
   * Revokes the member's CLI keys of the workspace and the Connection Keys they minted there (a
   * key spends the workspace's credit), telling every instance once the transaction commits; the
   * caller forgets the answered ids on this one after the commit.
   */
  async #revokeKeys(trx: Transaction<Database>, tenantId: string, userId: string): Promise<string[]> {
    const keys = await trx
      .updateTable('api_keys')
      .set({ revoked_at: new Date() })
      .where('tenant_id', '=', tenantId)
      .where('kind', 'in', ['cli', 'connection'])
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .returning('id')
      .execute();
    const ids = keys.map((row) => row.id);
    await sendNotices(trx, keyNotices(ids));
    return ids;
  }

  /** The member, with the workspace row locked for the rest of the transaction (404 if not one). */
  async #locked(trx: Transaction<Database>, tenantId: string, userId: string): Promise<Member> {
    if (!isUuid(userId)) throw noSuchMember();
    await trx.selectFrom('tenants').select('id').where('id', '=', tenantId).forUpdate().executeTakeFirst();
    const row = await this.#members(trx, tenantId)
      .where('memberships.user_id', '=', userId)
      .executeTakeFirst();
    if (!row) throw noSuchMember();
    return member(row);
  }

  async #keepAnOwner(trx: Transaction<Database>, tenantId: string): Promise<void> {
    const { owners } = await trx
      .selectFrom('memberships')
      .select((eb) => eb.fn.countAll<string>().as('owners'))
      .where('tenant_id', '=', tenantId)
      .where('role', '=', 'owner')
      .executeTakeFirstOrThrow();
    if (Number(owners) <= 1) throw lastOwner();
  }

  #members(db: Kysely<Database>, tenantId: string) {
    return db
      .selectFrom('memberships')
      .innerJoin('users', 'users.id', 'memberships.user_id')
      .select(['users.id', 'users.email', 'users.name', 'memberships.role', 'memberships.created_at'])
      .where('memberships.tenant_id', '=', tenantId);
  }
}

function member(row: {
  id: string;
  email: string | null;
  name: string | null;
  role: MembershipRole;
  created_at: Date;
}): Member {
  return { userId: row.id, email: row.email, name: row.name, role: row.role, joinedAt: row.created_at };
}
