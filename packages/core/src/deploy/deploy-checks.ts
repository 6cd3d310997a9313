/** What a deploy checks before it makes anything: the billing gate, the tool, its release, the bindings. */
import type { Kysely } from 'kysely';
import type { BalanceReader } from '../billing/balances.js';
import { releaseIsRunnable } from '../catalog/releases.js';
import type { TenantConnections } from '../connections/tenant-connections.js';
import type { Database } from '../store/database.js';
import { DeployError } from './errors.js';

/** The billing gate's message when the workspace never added credit. */
const NOT_SETUP = 'Add credit to this workspace before deploying';

/**
 * 402 `BILLING_NOT_SETUP` when credit was never added to the workspace (no purchase, reload or
 * grant in its ledger); 402 `INSUFFICIENT_CREDITS` when its balance is at or below zero.
 */
export async function billingGate(
  db: Kysely<Database>,
  balances: BalanceReader,
  tenantId: string,
): Promise<void> {
  const funded = await db
    .selectFrom('ledger_entries')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('kind', 'in', ['purchase', 'reload', 'grant'])
    .limit(1)
    .executeTakeFirst();
  if (!funded) throw new DeployError(402, NOT_SETUP, 'BILLING_NOT_SETUP');
  if ((await balances.micros(tenantId)) <= 0) {
    throw new DeployError(
      402,
      'The workspace is out of credit; add credit to deploy',
      'INSUFFICIENT_CREDITS',
    );
  }
}

/** A catalog tool, or the tenant's own; enabled. */
export async function findTool(db: Kysely<Database>, tenantId: string, slug: string) {
  const tool = await db
    .selectFrom('tools')
    .select(['id', 'name'])
    .where('slug', '=', slug)
    .where('enabled', '=', true)
    .where((eb) => eb.or([eb('owner_tenant_id', 'is', null), eb('owner_tenant_id', '=', tenantId)]))
    .executeTakeFirst();
  if (!tool) throw new DeployError(404, `No tool "${slug}"`, 'TOOL_NOT_FOUND');
  return tool;
}

/** The release of `version`, else the active one; never a withdrawn one, always runnable. */
export async function findRelease(db: Kysely<Database>, toolId: string, version?: string) {
  let query = db
    .selectFrom('tool_releases')
    .select([
      'id',
      'version',
      'manifest',
      'wizard_inputs',
      'required_integrations',
      'optional_integrations',
      'artifact',
    ])
    .where('tool_id', '=', toolId)
    .where('status', '!=', 'withdrawn');
  query = version === undefined ? query.where('status', '=', 'active') : query.where('version', '=', version);
  const release = await query.executeTakeFirst();
  if (!release) {
    throw version === undefined
      ? new DeployError(403, 'The tool has no active release', 'TOOL_UNRELEASED')
      : new DeployError(404, `No release "${version}" of the tool`, 'RELEASE_NOT_FOUND');
  }
  if (!releaseIsRunnable(release)) {
    throw new DeployError(409, 'The release has nothing this platform can run', 'RELEASE_NOT_RUNNABLE');
  }
  return release;
}

/**
 * The connections a new deployment gets bound: for each required integration the one named, else
 * the tenant's newest connected one (409 `INTEGRATION_REQUIRED` when there is none); optional
 * ones only when named.
 */
export async function bindingsFor(
  connections: TenantConnections,
  tenantId: string,
  release: { required_integrations: string[]; optional_integrations: string[] },
  named: Record<string, string>,
): Promise<string[]> {
  const required = new Set(release.required_integrations);
  const optional = new Set(release.optional_integrations);
  const own = await connections.list(tenantId);
  const chosen: string[] = [];
  for (const [provider, connectionId] of Object.entries(named)) {
    if (!required.has(provider) && !optional.has(provider)) {
      throw new DeployError(
        400,
        `The tool does not use the integration "${provider}"`,
        'UNKNOWN_INTEGRATION',
      );
    }
    const connection = own.find((row) => row.id === connectionId);
    if (!connection || connection.provider !== provider) {
      throw new DeployError(
        400,
        `Connection ${connectionId} is not a ${provider} connection of this workspace`,
        'INVALID_CONNECTION',
      );
    }
    if (connection.status !== 'connected') {
      throw new DeployError(
        409,
        `The ${provider} connection is ${connection.status}; reconnect it first`,
        'CONNECTION_NOT_CONNECTED',
      );
    }
    chosen.push(connection.id);
  }
  for (const provider of required) {
    if (named[provider]) continue;
    const newest = own.filter((row) => row.provider === provider && row.status === 'connected').at(-1);
    if (!newest) {
      throw new DeployError(
        409,
        `The tool needs a connected ${provider} integration; connect it first`,
        'INTEGRATION_REQUIRED',
      );
    }
    chosen.push(newest.id);
  }
  return chosen;
}
