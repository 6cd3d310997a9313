import type { RuntimeConnection } from '../schemas/connections.js';
import type { TokenRefresher } from './oauth-refresh.js';
import { runtimeConnections } from './runtime.js';
import {
  bindConnection,
  type ConnectionPatch,
  type ConnectionRow,
  type ConnectionsDeps,
  type CreateConnectionInput,
  createConnection,
  ensureManagedConnection,
  getConnection,
  listConnectionKeys,
  listConnections,
  mintConnectionKey,
  revokeConnection,
  revokeConnectionKey,
  unbindConnection,
  updateConnection,
} from './service.js';

/**
 * The connection operations of `service.ts` over one store, sealer and key store: what the
 * platform's routes are given instead of the database. Failures are `ConnectionError`s.
 */
export class TenantConnections {
  constructor(
    private readonly deps: ConnectionsDeps,
    /** Renews connector OAuth tokens a tool is about to read when they are about to expire. */
    private readonly refresher: TokenRefresher | null = null,
  ) {}

  create(input: CreateConnectionInput): Promise<ConnectionRow> {
    return createConnection(this.deps, input);
  }

  /** The tenant's managed-pool connection to `provider`, made when there is none. */
  ensureManaged(tenantId: string, provider: string) {
    return ensureManagedConnection(this.deps, tenantId, provider);
  }

  list(tenantId: string): Promise<ConnectionRow[]> {
    return listConnections(this.deps.db, tenantId);
  }

  get(tenantId: string, id: string): Promise<ConnectionRow> {
    return getConnection(this.deps.db, tenantId, id);
  }

  update(tenantId: string, id: string, patch: ConnectionPatch): Promise<ConnectionRow> {
    return updateConnection(this.deps, tenantId, id, patch);
  }

  revoke(tenantId: string, id: string): Promise<ConnectionRow> {
    return revokeConnection(this.deps, tenantId, id);
  }

  bind(tenantId: string, appId: string, connectionId: string): Promise<void> {
    return bindConnection(this.deps, tenantId, appId, connectionId);
  }

  unbind(tenantId: string, appId: string, connectionId: string): Promise<void> {
    return unbindConnection(this.deps, tenantId, appId, connectionId);
  }

  /** A new Connection Key for a live connection, minted by a member; the key is shown once. */
  mintKey(tenantId: string, connectionId: string, mintedBy: string, name?: string) {
    return mintConnectionKey(this.deps, tenantId, connectionId, mintedBy, name);
  }

  /** The live Connection Keys of a connection (never the keys themselves). */
  listKeys(tenantId: string, connectionId: string) {
    return listConnectionKeys(this.deps, tenantId, connectionId);
  }

  /** Revokes one Connection Key (404 unless it is a live key of this tenant's connection). */
  revokeKey(tenantId: string, connectionId: string, keyId: string): Promise<void> {
    return revokeConnectionKey(this.deps, tenantId, connectionId, keyId);
  }

  /** What the deployed tool of `appId` reads about its connections (proxy URLs under `baseUrl`). */
  forRuntime(baseUrl: string, appId: string): Promise<RuntimeConnection[]> {
    return runtimeConnections(this.deps.db, this.deps.sealer, baseUrl, appId, this.refresher);
  }
}
