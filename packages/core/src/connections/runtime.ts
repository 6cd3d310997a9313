import type { Kysely } from 'kysely';
import type { ConnectionCredential, RuntimeConnection } from '../schemas/connections.js';
import type { Database } from '../store/database.js';
import type { Sealer } from '../store/sealing.js';
import { openCredential } from './credentials.js';

/**
 * What a deployed tool reads about its connections (`GET /api/deployments/me/connections`): the
 * connections bound to its app, revoked ones left out, each with how to reach the provider and
 * the environment variables to set.
 *
 * @see docs/api/runtime.md
 */
export async function runtimeConnections(
  db: Kysely<Database>,
  sealer: Sealer | null,
  baseUrl: string,
  appId: string,
): Promise<RuntimeConnection[]> {
  const rows = await db
    .selectFrom('app_connections')
    .innerJoin('connections', 'connections.id', 'app_connections.connection_id')
    .leftJoin('integrations', 'integrations.provider', 'connections.provider')
    .select([
      'connections.id',
      'connections.provider',
      'connections.display_name',
      'connections.profile',
      'connections.status',
      'connections.metadata',
      'connections.credential_ciphertext',
      'connections.error_message',
      'connections.setup_url',
      'connections.connected_at',
      'integrations.category',
      'integrations.env_bootstrap',
      'integrations.logo_url',
      'integrations.docs_url',
    ])
    .where('app_connections.app_id', '=', appId)
    .where('connections.status', '<>', 'revoked')
    .orderBy('connections.created_at')
    .orderBy('connections.id')
    .execute();
  return rows.map((row) => {
    const proxyUrl = `${baseUrl}/proxy/${row.provider}`;
    const credential: ConnectionCredential | null = row.credential_ciphertext
      ? openCredential(sealer, row.id, row.credential_ciphertext)
      : { type: 'proxy', base_url: proxyUrl };
    const bootstrap = row.env_bootstrap ?? { vars: [], restart: 'none' };
    return {
      id: row.id,
      slug: row.provider,
      display_name: row.display_name,
      category: row.category ?? '',
      profile: row.profile,
      status: row.status,
      metadata: row.metadata,
      credential,
      env_bootstrap: {
        restart: bootstrap.restart,
        // Values the tool does not already hold are filled in; its own key never is.
        vars: bootstrap.vars.map((v) => ({
          name: v.name,
          value_from: v.value_from,
          value: v.value_from === 'proxy_url' ? proxyUrl : null,
        })),
      },
      setup_url: row.setup_url,
      error_message: row.error_message,
      connected_at: row.connected_at ? new Date(row.connected_at).toISOString() : null,
      logo_url: row.logo_url ?? '',
      docs_url: row.docs_url ?? '',
    };
  });
}
