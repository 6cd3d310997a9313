/**
 * Organizations on the wire: the workspaces a user belongs to, their members, and which one the
 * user works in. The wire does not hold organizations: a `WireOrgs` source does (the platform's
 * workspaces in the cloud, or the host's own). Without one, `/orgs` and `?org=` answer
 * `402 cloud_required` before the principal is resolved.
 *
 * In an organization's workspace a request acts as `service:org:<orgId>` (threads, files, runs
 * and approvals are the organization's, shared by its members), with `actor` naming the human.
 *
 * @see docs/wire.md "Organizations"
 */
import type { Kysely } from 'kysely';
import type { Principal } from '../agent/tools.js';
import type { Database } from '../store/database.js';

export const ORG_PREFIX = 'service:org:';

export interface WireOrg {
  /** At most 128 characters of `[A-Za-z0-9_.-]`. */
  id: string;
  name: string;
  role: 'owner' | 'admin' | 'member';
}

export interface WireOrgMember {
  subject: string;
  name: string | null;
  email: string | null;
  role: 'owner' | 'admin' | 'member';
}

/** A source of organizations. Every call is for one signed-in user. */
export interface WireOrgs {
  readonly kind: 'byo' | 'cloud';
  /** The organizations `user` belongs to. */
  list(user: Principal): Promise<WireOrg[]>;
  /** The members of `orgId`, or null when `user` is not one of them. */
  members(user: Principal, orgId: string): Promise<WireOrgMember[] | null>;
}

export function isWireOrgs(value: unknown): value is WireOrgs {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    (v.kind === 'byo' || v.kind === 'cloud') &&
    typeof v.list === 'function' &&
    typeof v.members === 'function'
  );
}

/** The principal of an organization's workspace, acting for `user`. */
export function orgPrincipal(org: WireOrg, user: Principal): Principal {
  return { subject: ORG_PREFIX + org.id, kind: 'org', orgId: org.id, actor: user.subject };
}

/** Which workspace each user switched to (their own when none). */
export class OrgSelections {
  constructor(private readonly db: Kysely<Database>) {}

  async current(owner: string): Promise<string | null> {
    const row = await this.db
      .selectFrom('wire_org_selections')
      .select('org_id')
      .where('owner', '=', owner)
      .executeTakeFirst();
    return row?.org_id ?? null;
  }

  async switchTo(owner: string, orgId: string | null): Promise<void> {
    if (orgId === null) {
      await this.db.deleteFrom('wire_org_selections').where('owner', '=', owner).execute();
      return;
    }
    await this.db
      .insertInto('wire_org_selections')
      .values({ owner, org_id: orgId })
      .onConflict((oc) => oc.column('owner').doUpdateSet({ org_id: orgId, updated_at: new Date() }))
      .execute();
  }
}
