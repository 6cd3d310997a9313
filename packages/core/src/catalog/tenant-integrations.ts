import { type Kysely, sql } from 'kysely';
import type { Database } from '../store/database.js';

/** The profile of a connection holding the tenant's own, static API key. */
export const BYOK_STATIC_PROFILE = 'byok_static';

/** Where one tenant stands with one integration. */
export interface TenantIntegrationState {
  provider: string;
  /** The tenant's own switch where it set one; unset, whether it has a connected connection to the integration. */
  tenantEnabled: boolean;
  /**
   * As `tenantEnabled`, but for the LLM gateway only a connection holding the tenant's own static
   * key counts (the managed pool alone does not mean the tenant chose the gateway): what one
   * integration's detail says.
   */
  chosen: boolean;
  /** The tenant has a connected connection to the integration, of any profile. */
  provisioned: boolean;
}

/**
 * Every integration of the catalog with where `tenantId` stands with it, in one query. An explicit
 * switch wins over connections: a tenant that turned an integration off sees it off.
 */
export async function tenantIntegrationStates(
  db: Kysely<Database>,
  tenantId: string,
): Promise<Map<string, TenantIntegrationState>> {
  const rows = await db
    .selectFrom('integrations as i')
    .leftJoin('tenant_integrations as t', (join) =>
      join.onRef('t.provider', '=', 'i.provider').on('t.tenant_id', '=', tenantId),
    )
    .select((eb) => [
      'i.provider',
      't.enabled',
      eb
        .exists(
          eb
            .selectFrom('connections as c')
            .select(sql.lit(1).as('one'))
            .where('c.tenant_id', '=', tenantId)
            .where('c.end_user', 'is', null)
            .whereRef('c.provider', '=', 'i.provider')
            .where('c.status', '=', 'connected'),
        )
        .as('provisioned'),
      eb
        .exists(
          eb
            .selectFrom('connections as c')
            .select(sql.lit(1).as('one'))
            .where('c.tenant_id', '=', tenantId)
            .where('c.end_user', 'is', null)
            .whereRef('c.provider', '=', 'i.provider')
            .where('c.status', '=', 'connected')
            .where((w) => w.or([w('i.kind', '<>', 'llm_gateway'), w('c.profile', '=', BYOK_STATIC_PROFILE)])),
        )
        .as('implied'),
    ])
    .execute();
  const states = new Map<string, TenantIntegrationState>();
  for (const row of rows) {
    states.set(row.provider, {
      provider: row.provider,
      tenantEnabled: row.enabled ?? Boolean(row.provisioned),
      chosen: row.enabled ?? Boolean(row.implied),
      provisioned: Boolean(row.provisioned),
    });
  }
  return states;
}
