import type { Kysely } from 'kysely';
import { isUuid } from '../internal/uuid.js';
import type { Database, MembershipRole, TenantStatus } from '../store/database.js';

/** A refusal of a workspace, member or account change, with its status and flat-body code. */
export class WorkspaceError extends Error {
  override name = 'WorkspaceError';
  constructor(
    readonly status: 403 | 404 | 409,
    message: string,
    readonly code: 'FORBIDDEN' | 'NOT_FOUND' | 'CONFLICT',
  ) {
    super(message);
  }
}

const noSuchWorkspace = () => new WorkspaceError(404, 'Workspace not found', 'NOT_FOUND');

/** A workspace as one of its members sees it. */
export interface WorkspaceSummary {
  id: string;
  name: string;
  status: TenantStatus;
  /** The caller's role there. */
  role: MembershipRole;
  createdAt: Date;
}

export interface UserProfile {
  id: string;
  email: string | null;
  name: string | null;
  /** The workspace the dashboard acts on (what the session resolves to); null: none left. */
  currentTenantId: string | null;
  createdAt: Date;
}

/**
 * Workspaces and the people in them: a user's workspaces and the current one, the workspace's
 * own settings, and the user's profile. Every read and change is made as a member: a workspace
 * the user is not in is not found.
 */
export class Workspaces {
  constructor(private readonly db: Kysely<Database>) {}

  /** The user's workspaces with their role in each, oldest first. */
  async listFor(userId: string): Promise<WorkspaceSummary[]> {
    const rows = await this.#memberOf(userId).orderBy('tenants.created_at').orderBy('tenants.id').execute();
    return rows.map(summary);
  }

  /** One of the user's workspaces (404 when they are not in it). */
  async get(tenantId: string, userId: string): Promise<WorkspaceSummary> {
    if (!isUuid(tenantId)) throw noSuchWorkspace();
    const row = await this.#memberOf(userId).where('tenants.id', '=', tenantId).executeTakeFirst();
    if (!row) throw noSuchWorkspace();
    return summary(row);
  }

  /** Renames a workspace. The caller's role is checked by the route. */
  async rename(tenantId: string, userId: string, name: string): Promise<WorkspaceSummary> {
    await this.db.updateTable('tenants').set({ name }).where('id', '=', tenantId).execute();
    return this.get(tenantId, userId);
  }

  /**
   * A new workspace with the user as its owner and an empty wallet; it becomes their current
   * one, as a workspace just made is the one they mean to work in.
   */
  async create(userId: string, name: string): Promise<WorkspaceSummary> {
    const tenantId = await this.db.transaction().execute(async (trx) => {
      const tenant = await trx
        .insertInto('tenants')
        .values({ name })
        .returning('id')
        .executeTakeFirstOrThrow();
      await trx
        .insertInto('memberships')
        .values({ tenant_id: tenant.id, user_id: userId, role: 'owner' })
        .execute();
      await trx.insertInto('wallets').values({ tenant_id: tenant.id }).execute();
      await trx.updateTable('users').set({ default_tenant_id: tenant.id }).where('id', '=', userId).execute();
      return tenant.id;
    });
    return this.get(tenantId, userId);
  }

  /**
   * Makes one of the user's workspaces their current one: every dashboard route acts on it from
   * the next request on, in every browser the user is signed in with (404 when not a member).
   */
  async switchTo(userId: string, tenantId: string): Promise<WorkspaceSummary> {
    const workspace = await this.get(tenantId, userId);
    await this.db
      .updateTable('users')
      .set({ default_tenant_id: tenantId })
      .where('id', '=', userId)
      .execute();
    return workspace;
  }

  /** The user's own account. */
  async profile(userId: string): Promise<UserProfile> {
    const row = await this.db
      .selectFrom('users')
      .select(['id', 'email', 'name', 'default_tenant_id', 'created_at'])
      .where('id', '=', userId)
      .executeTakeFirst();
    if (!row) throw new WorkspaceError(404, 'User not found', 'NOT_FOUND');
    return {
      id: row.id,
      email: row.email,
      name: row.name,
      currentTenantId: row.default_tenant_id,
      createdAt: row.created_at,
    };
  }

  /** Sets (or, with null, clears) the user's display name. */
  async renameUser(userId: string, name: string | null): Promise<UserProfile> {
    await this.db.updateTable('users').set({ name }).where('id', '=', userId).execute();
    return this.profile(userId);
  }

  #memberOf(userId: string) {
    return this.db
      .selectFrom('memberships')
      .innerJoin('tenants', 'tenants.id', 'memberships.tenant_id')
      .select(['tenants.id', 'tenants.name', 'tenants.status', 'tenants.created_at', 'memberships.role'])
      .where('memberships.user_id', '=', userId);
  }
}

function summary(row: {
  id: string;
  name: string;
  status: TenantStatus;
  created_at: Date;
  role: MembershipRole;
}): WorkspaceSummary {
  return { id: row.id, name: row.name, status: row.status, role: row.role, createdAt: row.created_at };
}
