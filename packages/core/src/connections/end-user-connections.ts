import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isUuid } from '../internal/uuid.js';
import type { Database } from '../store/database.js';
import { type ConnectorOAuth, STATE_TTL_MS } from './connector-oauth.js';
import type { OAuthClients } from './oauth-clients.js';
import { ConnectorOAuthError } from './oauth-errors.js';

/** A host app's user's connection as the host reads it (the wire's connection shape). */
export interface EndUserConnection {
  /** `flw_...` while the sign-in is in progress, then the connection's own id. */
  id: string;
  provider: string;
  status: 'pending' | 'connected' | 'needs_reauth' | 'failed' | 'revoked';
  displayName: string | null;
  error: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface EndUserCatalogEntry {
  provider: string;
  name: string;
  description: string | null;
  category: string | null;
  logoUrl: string | null;
}

/** Who asks: the workspace and app of the App Key, and the host's user it acts for. */
export interface EndUserScope {
  tenantId: string;
  appId: string;
  endUser: string;
}

const STATUS = {
  connected: 'connected',
  needs_reauth: 'needs_reauth',
  revoked: 'revoked',
  error: 'failed',
} as const;
const notFound = () => new ConnectorOAuthError(404, 'NOT_FOUND', 'Connection not found');

/**
 * Connections a host app's own users make through the platform, for the wire's `cloud`
 * connections source. A user's connections are kept apart by (workspace, host user): every read
 * and change names both, and another user's connection is not found. Connecting is the
 * platform's connector OAuth, started for the host's user: a flow the host polls (`flw_...`),
 * whose browser comes back to a page of the host on an origin the app registered.
 *
 * @see docs/wire.md "Connections"
 */
export class EndUserConnections {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly oauth: ConnectorOAuth,
    private readonly clients: OAuthClients,
    private readonly baseUrl: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The connectors a host's user can connect: enabled, and with an OAuth client configured. */
  async catalog(): Promise<EndUserCatalogEntry[]> {
    const rows = await this.db
      .selectFrom('integrations')
      .select(['provider', 'name', 'description', 'category'])
      .where('kind', '=', 'connector')
      .where('enabled', '=', true)
      .orderBy('name')
      .execute();
    const entries: EndUserCatalogEntry[] = [];
    for (const row of rows) {
      if (!(await this.clients.find(row.provider))) continue;
      entries.push({ ...row, logoUrl: `${this.baseUrl}/static/integrations/${row.provider}.svg` });
    }
    return entries;
  }

  /** Starts a sign-in at the provider for the host's user: the pending connection and where to send them. */
  async initiate(
    scope: EndUserScope,
    input: { provider: string; callbackUrl: string },
  ): Promise<{ connection: EndUserConnection; authorizeUrl: string }> {
    const app = await this.db
      .selectFrom('apps')
      .select('callback_origins')
      .where('id', '=', scope.appId)
      .where('tenant_id', '=', scope.tenantId)
      .executeTakeFirst();
    const origin = URL.canParse(input.callbackUrl) ? new URL(input.callbackUrl).origin : null;
    if (!app || origin === null || !app.callback_origins.includes(origin)) {
      throw new ConnectorOAuthError(
        400,
        'INVALID_CALLBACK',
        "callbackUrl must be on one of the app's callback origins (set them with PUT /api/apps/{id}/callback-origins)",
      );
    }
    const id = `flw_${randomBytes(16).toString('base64url')}`;
    const flow = await this.db
      .insertInto('end_user_flows')
      .values({
        id,
        tenant_id: scope.tenantId,
        app_id: scope.appId,
        end_user: scope.endUser,
        provider: input.provider,
        status: 'pending',
        expires_at: new Date(this.now() + STATE_TTL_MS),
      })
      .returningAll()
      .executeTakeFirstOrThrow()
      .catch((error: unknown) => {
        // The provider is not an integration of the catalog (its foreign key).
        if (String((error as { code?: unknown }).code) === '23503')
          throw new ConnectorOAuthError(404, 'NOT_FOUND', `Unknown integration: ${input.provider}`);
        throw error;
      });
    try {
      const { authorizeUrl } = await this.oauth.start({
        tenantId: scope.tenantId,
        userId: null,
        endUser: { subject: scope.endUser, flowId: id },
        provider: input.provider,
        returnTo: input.callbackUrl,
      });
      return { connection: this.flowView(flow), authorizeUrl };
    } catch (error) {
      await this.db.deleteFrom('end_user_flows').where('id', '=', id).execute();
      throw error;
    }
  }

  /** The host's user's connections, newest first, with the sign-ins still in progress. */
  async list(scope: EndUserScope): Promise<EndUserConnection[]> {
    const [connections, flows] = await Promise.all([
      this.connections(scope).where('status', '<>', 'revoked').execute(),
      this.flows(scope)
        .where('status', '=', 'pending')
        .where('expires_at', '>', new Date(this.now()))
        .execute(),
    ]);
    return [
      ...flows.map((flow) => this.flowView(flow)),
      ...connections.map((row) => this.connectionView(row)),
    ].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  /** One of them: a flow answers as pending, failed, revoked (cancelled), or the connection it made. */
  async get(scope: EndUserScope, id: string): Promise<EndUserConnection> {
    if (id.startsWith('flw_')) {
      const flow = await this.flows(scope).where('id', '=', id).executeTakeFirst();
      if (!flow) throw notFound();
      const made = flow.connection_id
        ? await this.connections(scope).where('id', '=', flow.connection_id).executeTakeFirst()
        : undefined;
      return made ? this.connectionView(made) : this.flowView(flow);
    }
    if (!isUuid(id)) throw notFound();
    const row = await this.connections(scope).where('id', '=', id).executeTakeFirst();
    if (!row) throw notFound();
    return this.connectionView(row);
  }

  /**
   * Disconnects (revoking the tokens at the provider too), or cancels a sign-in in progress: it
   * is `revoked` from then on, and a flow that had already ended is answered as it stands.
   */
  async disconnect(scope: EndUserScope, id: string): Promise<EndUserConnection> {
    const current = await this.get(scope, id);
    if (current.id.startsWith('flw_')) {
      if (current.status !== 'pending') return current;
      // Its state goes first: the person finishing the provider's sign-in later connects nothing.
      await this.db.deleteFrom('oauth_states').where('flow_id', '=', current.id).execute();
      await this.db
        .updateTable('end_user_flows')
        .set({ status: 'revoked', error: null, updated_at: new Date() })
        .where('id', '=', current.id)
        .where('status', '=', 'pending')
        .execute();
      return this.get(scope, current.id);
    }
    const { connection } = await this.oauth.disconnect(
      scope.tenantId,
      current.provider,
      current.id,
      scope.endUser,
    );
    return this.connectionView(connection);
  }

  /** Records why a sign-in in progress did not connect. */
  async fail(flowId: string, reason: string): Promise<void> {
    await this.db
      .updateTable('end_user_flows')
      .set({ status: 'failed', error: reason.slice(0, 500), updated_at: new Date() })
      .where('id', '=', flowId)
      .where('status', '=', 'pending')
      .execute();
  }

  private connections(scope: EndUserScope) {
    return this.db
      .selectFrom('connections')
      .select([
        'id',
        'provider',
        'status',
        'display_name',
        'error_message',
        'created_at',
        'updated_at',
        'end_user',
      ])
      .where('tenant_id', '=', scope.tenantId)
      .where('end_user', '=', scope.endUser);
  }

  private flows(scope: EndUserScope) {
    return this.db
      .selectFrom('end_user_flows')
      .selectAll()
      .where('tenant_id', '=', scope.tenantId)
      .where('end_user', '=', scope.endUser);
  }

  private connectionView(row: {
    id: string;
    provider: string;
    status: keyof typeof STATUS;
    display_name: string;
    error_message: string | null;
    created_at: Date;
    updated_at: Date;
  }): EndUserConnection {
    return {
      id: row.id,
      provider: row.provider,
      status: STATUS[row.status],
      displayName: row.display_name,
      error: row.error_message,
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
    };
  }

  private flowView(flow: {
    id: string;
    provider: string;
    status: string;
    error: string | null;
    created_at: Date;
    updated_at: Date;
    expires_at: Date;
  }): EndUserConnection {
    const lapsed = flow.status === 'pending' && flow.expires_at.getTime() <= this.now();
    return {
      id: flow.id,
      provider: flow.provider,
      status:
        flow.status === 'revoked' ? 'revoked' : flow.status === 'pending' && !lapsed ? 'pending' : 'failed',
      displayName: null,
      error: lapsed ? 'The sign-in was not completed in time' : flow.error,
      createdAt: flow.created_at.toISOString(),
      updatedAt: flow.updated_at.toISOString(),
    };
  }
}
