import type { Kysely } from 'kysely';
import { appendEvents } from '../events/log.js';
import type { ConnectionCredential, RuntimeConnection } from '../schemas/connections.js';
import type { Database } from '../store/database.js';
import type { Sealer } from '../store/sealing.js';
import { openCredential, type StoredCredential, USER_OAUTH_PROFILE } from './credentials.js';
import type { TokenRefresher } from './oauth-refresh.js';

/**
 * What a deployed tool reads about its connections (`GET /api/deployments/me/connections`): the
 * connections bound to its app, revoked ones left out, each with how to reach the provider and
 * the environment variables to set.
 *
 * A stored credential that does not open (sealed under a key no longer configured, or damaged)
 * is no reason to refuse the rest: that connection is answered with `status: "error"`, no
 * credential and an `error_message` saying to connect again, and is marked so in the store (its
 * bound apps hear `connection.status_changed` once, whichever instance noticed first).
 *
 * `logo_url` and `docs_url` are the integration's own, empty when it leaves them to the platform:
 * the route answers the platform's then (`integrationLogoOf` and `integrationDocsOf` of the
 * catalog, a layer above this one).
 *
 * Connector OAuth tokens about to expire are renewed first (by `refresher`), so a tool never
 * reads an access token that lapses within the refresh window while a refresh token could renew it.
 *
 * @see docs/api/runtime.md
 */
export async function runtimeConnections(
  db: Kysely<Database>,
  sealer: Sealer | null,
  baseUrl: string,
  appId: string,
  refresher: TokenRefresher | null = null,
): Promise<RuntimeConnection[]> {
  let rows = await boundConnections(db, appId);
  const due = refresher
    ? rows.filter(
        (row) =>
          row.profile === USER_OAUTH_PROFILE &&
          row.status === 'connected' &&
          refresher.isDue(row.token_expires_at),
      )
    : [];
  if (due.length > 0) {
    await refresher!.refreshDue(due.map((row) => row.id));
    rows = await boundConnections(db, appId);
  }
  const unreadable: string[] = [];
  const connections = rows.map((row) => {
    const proxyUrl = `${baseUrl}/proxy/${row.provider}`;
    let credential: ConnectionCredential | null = { type: 'proxy', base_url: proxyUrl };
    if (row.credential_ciphertext) {
      try {
        credential = toolCredential(openCredential(sealer, row.id, row.credential_ciphertext));
      } catch {
        // The cause (which key, what failed) is for the operator, never for the tool.
        credential = null;
        unreadable.push(row.id);
        Object.assign(row, { status: 'error', error_message: UNREADABLE_CREDENTIAL });
      }
    }
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
  if (unreadable.length > 0) await markUnreadable(db, unreadable);
  return connections;
}

/** What a tool is handed of a stored credential: never the refresh token, which stays here. */
function toolCredential(stored: StoredCredential): ConnectionCredential {
  return stored.type === 'oauth'
    ? { type: 'oauth', access_token: stored.access_token, expires_at: stored.expires_at }
    : { type: 'api_key', api_key: stored.api_key };
}

function boundConnections(db: Kysely<Database>, appId: string) {
  return db
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
      'connections.token_expires_at',
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
}

/** What a tool reads about a connection whose stored credential does not open. */
export const UNREADABLE_CREDENTIAL =
  'The stored credential could not be read; connect this integration again to replace it.';

/** Marks connections whose credential does not open as `error`, telling their apps once. */
async function markUnreadable(db: Kysely<Database>, connectionIds: string[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const changed = await trx
      .updateTable('connections')
      .set({ status: 'error', error_message: UNREADABLE_CREDENTIAL, updated_at: new Date() })
      .where('id', 'in', connectionIds)
      .where('status', 'not in', ['error', 'revoked'])
      .returning(['id', 'provider'])
      .execute();
    if (changed.length === 0) return;
    const bindings = await trx
      .selectFrom('app_connections')
      .select(['app_id', 'connection_id'])
      .where(
        'connection_id',
        'in',
        changed.map((row) => row.id),
      )
      .execute();
    const slugs = new Map(changed.map((row) => [row.id, row.provider]));
    await appendEvents(
      trx,
      bindings.map((binding) => ({
        appId: binding.app_id,
        kind: 'connection.status_changed' as const,
        fields: {
          slug: slugs.get(binding.connection_id)!,
          connection_id: binding.connection_id,
          status: 'error' as const,
        },
      })),
    );
  });
}
