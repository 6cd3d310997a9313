/** How the dashboard shows an app: its row, its tool and release, and its deployment's state. */
import type { Kysely } from 'kysely';
import type { Database, DesiredState } from '../store/database.js';
import type { DeploymentStatus } from './deployer.js';

/** An app as the dashboard shows it. */
export interface AppView {
  id: string;
  slug: string;
  name: string;
  toolSlug: string | null;
  version: string | null;
  createdAt: string;
  /** Null for an app that was never deployed (made by hand). */
  deployment: (DeploymentStatus & { desiredState: DesiredState }) | null;
  /** The deployment's usage (`GET`, owners). */
  usageUrl: string;
  /** The app through the app proxy, for the signed-in user's current workspace. */
  openUrl: string;
}

/** The apps of a workspace with what their view needs; narrow it with `where`. */
export function appRows(db: Kysely<Database>, tenantId: string) {
  return db
    .selectFrom('apps')
    .leftJoin('deployments', 'deployments.app_id', 'apps.id')
    .leftJoin('tools', 'tools.id', 'apps.tool_id')
    .leftJoin('tool_releases', 'tool_releases.id', 'apps.release_id')
    .select([
      'apps.id',
      'apps.slug',
      'apps.name',
      'apps.created_at',
      'tools.slug as tool_slug',
      'tool_releases.version',
      'deployments.desired_state',
      'deployments.updated_at as deployment_updated_at',
    ])
    .where('apps.tenant_id', '=', tenantId);
}

export function appView(
  row: {
    id: string;
    slug: string;
    name: string;
    created_at: Date;
    tool_slug: string | null;
    version: string | null;
    desired_state: DesiredState | null;
    deployment_updated_at: Date | null;
  },
  status: DeploymentStatus | undefined,
  baseUrl: string,
): AppView {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    toolSlug: row.tool_slug,
    version: row.version,
    createdAt: new Date(row.created_at).toISOString(),
    deployment:
      row.desired_state && status
        ? {
            ...status,
            // A deployment this instance never ran (stopped before it booted, or stopped on
            // another instance): since its desired state last changed, as the store says.
            since: status.since ?? new Date(row.deployment_updated_at!).toISOString(),
            desiredState: row.desired_state,
          }
        : null,
    usageUrl: `${baseUrl}/api/deployments/${row.id}/usage`,
    openUrl: `${baseUrl}/apps/${row.slug}/`,
  };
}
