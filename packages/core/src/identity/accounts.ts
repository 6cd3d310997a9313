import type { Kysely } from 'kysely';
import { readableName } from '../internal/readable-text.js';
import type { Database, MembershipRole } from '../store/database.js';

export interface IdentityClaims {
  /** The identity provider's subject. */
  subject: string;
  email?: string | null;
  name?: string | null;
}

export interface Account {
  userId: string;
  /** The user's own tenant (their workspace), created on first sight. */
  tenantId: string;
}

/**
 * The user and tenant for an identity, created on first sight: a user row keyed by the IdP
 * subject, a tenant they own, and an empty wallet. Safe when two requests race on a new subject:
 * both end with the same user and tenant.
 */
export async function ensureAccount(db: Kysely<Database>, claims: IdentityClaims): Promise<Account> {
  const existing = await db
    .selectFrom('users')
    .select(['id', 'default_tenant_id', 'email'])
    .where('idp_subject', '=', claims.subject)
    .executeTakeFirst();
  if (existing?.default_tenant_id) {
    if (claims.email && claims.email !== existing.email) {
      await db.updateTable('users').set({ email: claims.email }).where('id', '=', existing.id).execute();
    }
    return { userId: existing.id, tenantId: existing.default_tenant_id };
  }
  return db.transaction().execute(async (trx) => {
    await trx
      .insertInto('users')
      .values({ idp_subject: claims.subject, email: claims.email ?? null, name: personName(claims) })
      .onConflict((oc) => oc.column('idp_subject').doNothing())
      .execute();
    // Lock the user row so a racing request waits and then sees the tenant made here.
    const user = await trx
      .selectFrom('users')
      .select(['id', 'default_tenant_id'])
      .where('idp_subject', '=', claims.subject)
      .forUpdate()
      .executeTakeFirstOrThrow();
    if (user.default_tenant_id) return { userId: user.id, tenantId: user.default_tenant_id };
    const tenant = await trx
      .insertInto('tenants')
      .values({ name: workspaceName(claims) })
      .returning('id')
      .executeTakeFirstOrThrow();
    await trx
      .insertInto('memberships')
      .values({ tenant_id: tenant.id, user_id: user.id, role: 'owner' })
      .execute();
    await trx.insertInto('wallets').values({ tenant_id: tenant.id }).execute();
    await trx.updateTable('users').set({ default_tenant_id: tenant.id }).where('id', '=', user.id).execute();
    return { userId: user.id, tenantId: tenant.id };
  });
}

/** The identity provider's name for the person, as readable as the names people type. */
function personName(claims: IdentityClaims): string | null {
  return readableName(claims.name ?? '', NAME_MAX) || null;
}

function workspaceName(claims: IdentityClaims): string {
  const suffix = "'s workspace";
  const who =
    readableName(claims.name ?? '', NAME_MAX - suffix.length) ||
    readableName(claims.email?.split('@')[0] ?? '', NAME_MAX - suffix.length) ||
    'My';
  return `${who}${suffix}`;
}

/** The longest name a person can type for themselves or a workspace. */
const NAME_MAX = 100;

/** Users, their workspaces and their roles there, for the routes that act on them. */
export class Accounts {
  constructor(private readonly db: Kysely<Database>) {}

  /** The user and tenant of an identity, created on first sight (see `ensureAccount`). */
  ensure(claims: IdentityClaims): Promise<Account> {
    return ensureAccount(this.db, claims);
  }

  /** The user's role in the tenant, or null when they are not a member. */
  async roleIn(tenantId: string, userId: string): Promise<MembershipRole | null> {
    const membership = await this.db
      .selectFrom('memberships')
      .select('role')
      .where('tenant_id', '=', tenantId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return membership?.role ?? null;
  }

  /** The name of a tenant's workspace, or null for an unknown tenant. */
  async workspaceName(tenantId: string): Promise<string | null> {
    const tenant = await this.db
      .selectFrom('tenants')
      .select('name')
      .where('id', '=', tenantId)
      .executeTakeFirst();
    return tenant?.name ?? null;
  }
}

/** Owners and members change a workspace's things; viewers only read them. */
export function canWrite(role: MembershipRole): boolean {
  return role === 'owner' || role === 'member';
}
