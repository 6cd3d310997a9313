import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable, Transaction } from 'kysely';
import { appendEvents, type EventDraft } from '../events/log.js';
import type { KeyStore } from '../identity/key-store.js';
import { isUuid } from '../internal/uuid.js';
import type { ConnectionStatus } from '../schemas/connections.js';
import type { ConnectionsTable, Database } from '../store/database.js';
import { lockUntilCommit } from '../store/locks.js';
import type { Sealer } from '../store/sealing.js';
import {
  credentialForProfile,
  MANAGED_PROFILE,
  oauthStartPath,
  sealCredential,
  USER_OAUTH_PROFILE,
} from './credentials.js';
import { ConnectionError, conflict, invalid, notFound } from './errors.js';

/**
 * Connections of a tenant to providers, their bindings to apps, their keys and status. Every
 * change that a deployed tool should hear of is written to its app's event log in the same
 * transaction.
 *
 * Status moves among `connected`, `needs_reauth` and `error` freely; `revoked` is final (a revoked
 * connection is kept for history; connect again to get a new one).
 *
 * @see docs/api/connections.md
 */
export interface ConnectionsDeps {
  db: Kysely<Database>;
  sealer: Sealer | null;
  keys: KeyStore;
}

export type ConnectionRow = Selectable<ConnectionsTable>;

export interface CreateConnectionInput {
  tenantId: string;
  provider: string;
  profile?: string;
  displayName?: string;
  credential?: unknown;
  metadata?: Record<string, unknown>;
  exclusive?: boolean;
  /** Bind the new connection to this app of the tenant. */
  appId?: string | null;
}

export interface ConnectionPatch {
  status?: ConnectionStatus;
  displayName?: string;
  metadata?: Record<string, unknown>;
  credential?: unknown;
  errorMessage?: string | null;
  setupUrl?: string | null;
}

export async function createConnection(
  deps: ConnectionsDeps,
  input: CreateConnectionInput,
): Promise<ConnectionRow> {
  const integration = await deps.db
    .selectFrom('integrations')
    .select(['provider', 'name', 'kind', 'enabled', 'default_profile', 'supported_profiles'])
    .where('provider', '=', input.provider)
    .executeTakeFirst();
  if (!integration?.enabled) throw invalid(`Unknown integration: ${input.provider}`);
  const profile = input.profile ?? integration.default_profile;
  const profiles = new Set([integration.default_profile, ...integration.supported_profiles]);
  if (!profiles.has(profile)) {
    throw invalid(
      `Integration ${input.provider} does not support profile ${profile} (supports ${[...profiles].join(', ')})`,
    );
  }
  const byOAuth = profile === USER_OAUTH_PROFILE || integration.kind === 'connector';
  const credential = credentialForProfile(
    profile,
    input.credential,
    byOAuth ? oauthStartPath(input.provider) : undefined,
  );
  return deps.db.transaction().execute(async (trx) => {
    if (input.appId) await requireApp(trx, input.tenantId, input.appId);
    const id = randomUUID();
    const row = await trx
      .insertInto('connections')
      .values({
        id,
        tenant_id: input.tenantId,
        provider: input.provider,
        profile,
        status: 'connected',
        display_name: input.displayName ?? integration.name,
        metadata: JSON.stringify(input.metadata ?? {}),
        credential_ciphertext: credential ? sealCredential(deps.sealer, id, credential) : null,
        exclusive: input.exclusive ?? false,
        connected_at: new Date(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    if (input.appId) await bindWithin(trx, input.tenantId, input.appId, row);
    return row;
  });
}

/**
 * The tenant's connected managed-pool connection to `provider`, made when there is none: what
 * enabling a speech synthesis or transcription integration provisions. Never a second one, also
 * when two enables race (they take turns on a transaction lock of the tenant and provider).
 * Refused (400) when the integration does not offer the managed pool or no enabled provider
 * serves it.
 */
export async function ensureManagedConnection(
  deps: ConnectionsDeps,
  tenantId: string,
  provider: string,
): Promise<{ connection: ConnectionRow; created: boolean }> {
  return deps.db.transaction().execute(async (trx) => {
    await lockUntilCommit(trx, `managed-pool:${tenantId}:${provider}`);
    const existing = await trx
      .selectFrom('connections')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('provider', '=', provider)
      .where('profile', '=', MANAGED_PROFILE)
      .where('status', '=', 'connected')
      .orderBy('created_at')
      .executeTakeFirst();
    if (existing) return { connection: existing, created: false };
    const integration = await trx
      .selectFrom('integrations')
      .select(['name', 'enabled', 'default_profile', 'supported_profiles'])
      .where('provider', '=', provider)
      .executeTakeFirst();
    if (!integration?.enabled) throw invalid(`Unknown integration: ${provider}`);
    if (
      integration.default_profile !== MANAGED_PROFILE &&
      !integration.supported_profiles.includes(MANAGED_PROFILE)
    ) {
      throw invalid(`Integration ${provider} does not offer the managed pool`);
    }
    const pool = await trx
      .selectFrom('providers')
      .select('slug')
      .where('slug', '=', provider)
      .where('enabled', '=', true)
      .executeTakeFirst();
    if (!pool) throw invalid(`No managed pool is configured for ${provider}`);
    const connection = await trx
      .insertInto('connections')
      .values({
        tenant_id: tenantId,
        provider,
        profile: MANAGED_PROFILE,
        status: 'connected',
        display_name: integration.name,
        connected_at: new Date(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { connection, created: true };
  });
}

/**
 * A tenant's own connection, or a 404 for any other tenant's. A host app's user's connection is
 * that user's, found only by naming them (`endUser`): never by the workspace's own routes.
 */
export async function getConnection(
  db: Kysely<Database>,
  tenantId: string,
  id: string,
  endUser: string | null = null,
): Promise<ConnectionRow> {
  if (!isUuid(id)) throw notFound();
  const row = await db
    .selectFrom('connections')
    .selectAll()
    .where('id', '=', id)
    .where('tenant_id', '=', tenantId)
    .where((eb) => (endUser === null ? eb('end_user', 'is', null) : eb('end_user', '=', endUser)))
    .executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

/** The workspace's own connections (a host app's users' connections are theirs, not listed here). */
export async function listConnections(db: Kysely<Database>, tenantId: string): Promise<ConnectionRow[]> {
  return db
    .selectFrom('connections')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('end_user', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function updateConnection(
  deps: ConnectionsDeps,
  tenantId: string,
  id: string,
  patch: ConnectionPatch,
): Promise<ConnectionRow> {
  const current = await getConnection(deps.db, tenantId, id);
  if (current.status === 'revoked')
    throw conflict('The connection is revoked; connect again to make a new one');
  if (patch.status === 'revoked') throw invalid('Revoke a connection with DELETE /api/connections/{id}');
  const credential =
    patch.credential !== undefined
      ? credentialForProfile(
          current.profile,
          patch.credential,
          current.profile === USER_OAUTH_PROFILE ? oauthStartPath(current.provider, current.id) : undefined,
        )
      : undefined;
  return deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('connections')
      .set({
        ...(patch.status !== undefined ? { status: patch.status } : {}),
        ...(patch.status === 'connected' && current.status !== 'connected'
          ? { connected_at: new Date() }
          : {}),
        ...(patch.displayName !== undefined ? { display_name: patch.displayName } : {}),
        ...(patch.metadata !== undefined ? { metadata: JSON.stringify(patch.metadata) } : {}),
        ...(credential ? { credential_ciphertext: sealCredential(deps.sealer, id, credential) } : {}),
        ...(patch.errorMessage !== undefined ? { error_message: patch.errorMessage } : {}),
        ...(patch.setupUrl !== undefined ? { setup_url: patch.setupUrl } : {}),
        updated_at: new Date(),
      })
      .where('id', '=', id)
      .where('tenant_id', '=', tenantId)
      .where('status', '<>', 'revoked')
      .returningAll()
      .executeTakeFirst();
    if (!row) throw conflict('The connection changed meanwhile; read it again');
    const apps = await boundApps(trx, id);
    const drafts: EventDraft[] = [];
    const base = { slug: row.provider, connection_id: row.id };
    if (patch.status !== undefined && patch.status !== current.status) {
      for (const appId of apps)
        drafts.push({ appId, kind: 'connection.status_changed', fields: { ...base, status: row.status } });
    }
    const changed =
      (patch.displayName !== undefined && patch.displayName !== current.display_name) ||
      patch.metadata !== undefined ||
      credential !== undefined ||
      (patch.errorMessage !== undefined && patch.errorMessage !== current.error_message) ||
      (patch.setupUrl !== undefined && patch.setupUrl !== current.setup_url);
    if (changed) for (const appId of apps) drafts.push({ appId, kind: 'connection.changed', fields: base });
    await appendEvents(trx, drafts);
    return row;
  });
}

/**
 * Revokes a connection (the workspace's own, or `endUser`'s): its status becomes `revoked`, its
 * credential, bindings and keys go.
 */
export async function revokeConnection(
  deps: ConnectionsDeps,
  tenantId: string,
  id: string,
  endUser: string | null = null,
): Promise<ConnectionRow> {
  const current = await getConnection(deps.db, tenantId, id, endUser);
  if (current.status === 'revoked') return current;
  const row = await deps.db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('connections')
      // The tokens or key go with the connection: nothing can be read back from a revoked one.
      .set({
        status: 'revoked',
        credential_ciphertext: null,
        token_expires_at: null,
        refresh_claimed_until: null,
        updated_at: new Date(),
      })
      .where('id', '=', id)
      .where('tenant_id', '=', tenantId)
      .returningAll()
      .executeTakeFirstOrThrow();
    const apps = await boundApps(trx, id);
    await trx.deleteFrom('app_connections').where('connection_id', '=', id).execute();
    const base = { slug: updated.provider, connection_id: id };
    await appendEvents(
      trx,
      apps.flatMap((appId): EventDraft[] => [
        { appId, kind: 'connection.status_changed', fields: { ...base, status: 'revoked' } },
        { appId, kind: 'connection.disconnected', fields: base },
      ]),
    );
    return updated;
  });
  const keys = await deps.db
    .selectFrom('api_keys')
    .select('id')
    .where('connection_id', '=', id)
    .where('revoked_at', 'is', null)
    .execute();
  for (const key of keys) await deps.keys.revoke(key.id, tenantId);
  return row;
}

/** Binds a connection to an app of the same tenant. An exclusive connection bound elsewhere: 409. */
export async function bindConnection(
  deps: ConnectionsDeps,
  tenantId: string,
  appId: string,
  connectionId: string,
): Promise<void> {
  const connection = await getConnection(deps.db, tenantId, connectionId);
  if (connection.status === 'revoked') throw conflict('The connection is revoked');
  await deps.db.transaction().execute(async (trx) => {
    await requireApp(trx, tenantId, appId);
    await bindWithin(trx, tenantId, appId, connection);
  });
}

export async function unbindConnection(
  deps: ConnectionsDeps,
  tenantId: string,
  appId: string,
  connectionId: string,
): Promise<void> {
  const connection = await getConnection(deps.db, tenantId, connectionId);
  await deps.db.transaction().execute(async (trx) => {
    await requireApp(trx, tenantId, appId);
    const removed = await trx
      .deleteFrom('app_connections')
      .where('app_id', '=', appId)
      .where('connection_id', '=', connectionId)
      .executeTakeFirst();
    if (removed.numDeletedRows === 0n) throw notFound('Binding');
    await appendEvents(trx, [
      {
        appId,
        kind: 'connection.disconnected',
        fields: { slug: connection.provider, connection_id: connectionId },
      },
    ]);
  });
}

/**
 * Mints a Connection Key (shown once) for a live connection, in the name of the member who asked
 * for it: removing that member from the workspace revokes it.
 */
export async function mintConnectionKey(
  deps: ConnectionsDeps,
  tenantId: string,
  connectionId: string,
  mintedBy: string,
  name?: string,
) {
  const connection = await getConnection(deps.db, tenantId, connectionId);
  if (connection.status === 'revoked') throw conflict('The connection is revoked');
  return deps.keys.issue({
    tenantId,
    kind: 'connection',
    connectionId,
    userId: mintedBy,
    name: name ?? null,
  });
}

/** A live Connection Key as listed: never the key itself. */
export interface ConnectionKeySummary {
  id: string;
  name: string | null;
  prefix: string;
  /** The member who minted it (null for keys minted before that was recorded). */
  userId: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** The live Connection Keys of a tenant's connection, newest first (404 for another tenant's). */
export async function listConnectionKeys(
  deps: ConnectionsDeps,
  tenantId: string,
  connectionId: string,
): Promise<ConnectionKeySummary[]> {
  await getConnection(deps.db, tenantId, connectionId);
  const rows = await deps.db
    .selectFrom('api_keys')
    .select(['id', 'name', 'prefix', 'user_id', 'created_at', 'last_used_at'])
    .where('tenant_id', '=', tenantId)
    .where('kind', '=', 'connection')
    .where('connection_id', '=', connectionId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    userId: row.user_id,
    createdAt: new Date(row.created_at),
    lastUsedAt: row.last_used_at ? new Date(row.last_used_at) : null,
  }));
}

/**
 * Revokes one Connection Key of a tenant's connection, at once on every instance. Another
 * tenant's connection, a key of another connection, or one already revoked: 404.
 */
export async function revokeConnectionKey(
  deps: ConnectionsDeps,
  tenantId: string,
  connectionId: string,
  keyId: string,
): Promise<void> {
  await getConnection(deps.db, tenantId, connectionId);
  const key = isUuid(keyId)
    ? await deps.db
        .selectFrom('api_keys')
        .select('id')
        .where('id', '=', keyId)
        .where('tenant_id', '=', tenantId)
        .where('kind', '=', 'connection')
        .where('connection_id', '=', connectionId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst()
    : undefined;
  if (!key || !(await deps.keys.revoke(key.id, tenantId))) throw notFound('Connection Key');
}

/** Binds within a transaction (the connection row locked), telling the app. */
export async function bindWithin(
  trx: Transaction<Database>,
  tenantId: string,
  appId: string,
  connection: ConnectionRow,
): Promise<void> {
  // Lock the connection so two apps racing to bind an exclusive connection cannot both win.
  await trx.selectFrom('connections').select('id').where('id', '=', connection.id).forUpdate().execute();
  const bound = await boundApps(trx, connection.id);
  if (bound.includes(appId)) return;
  if (connection.exclusive && bound.length > 0) {
    throw conflict('This connection is exclusive and already bound to another app');
  }
  await trx
    .insertInto('app_connections')
    .values({ app_id: appId, connection_id: connection.id, tenant_id: tenantId })
    .execute();
  await appendEvents(trx, [
    {
      appId,
      kind: 'connection.connected',
      fields: { slug: connection.provider, connection_id: connection.id },
    },
  ]);
}

export async function boundApps(trx: Kysely<Database>, connectionId: string): Promise<string[]> {
  const rows = await trx
    .selectFrom('app_connections')
    .select('app_id')
    .where('connection_id', '=', connectionId)
    .orderBy('app_id')
    .execute();
  return rows.map((r) => r.app_id);
}

async function requireApp(trx: Transaction<Database>, tenantId: string, appId: string): Promise<void> {
  if (!isUuid(appId)) throw notFound('App');
  const app = await trx
    .selectFrom('apps')
    .select('id')
    .where('id', '=', appId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!app) throw notFound('App');
}

export { ConnectionError };
