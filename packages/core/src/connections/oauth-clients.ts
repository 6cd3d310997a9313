import type { Kysely, Selectable } from 'kysely';
import type { Database, IntegrationOAuthClientsTable, TokenAuthMethod } from '../store/database.js';
import type { Sealer } from '../store/sealing.js';
import { ConnectorOAuthError } from './oauth-errors.js';
import type { TokenClient } from './oauth-token-endpoint.js';

/**
 * Each connector integration's OAuth client: where the platform sends users to authorize, where it
 * exchanges and refreshes tokens, and with which client id and secret. The secret is sealed under
 * `oauth-client:<provider>` and never leaves this module except to the token endpoint.
 *
 * @see docs/api/oauth.md "Client configuration"
 */
export interface OAuthClientInput {
  authorizeUrl: string;
  tokenUrl: string;
  revocationUrl?: string | null;
  clientId: string;
  /** Omitted: keep the stored secret. Null: none (a public client). */
  clientSecret?: string | null;
  scopes?: string[];
  authorizeParams?: Record<string, string>;
  pkce?: boolean;
  tokenAuthMethod?: TokenAuthMethod;
}

/** What an admin reads back: everything but the secret. */
export interface OAuthClientView {
  provider: string;
  authorizeUrl: string;
  tokenUrl: string;
  revocationUrl: string | null;
  clientId: string;
  hasClientSecret: boolean;
  scopes: string[];
  authorizeParams: Record<string, string>;
  pkce: boolean;
  tokenAuthMethod: TokenAuthMethod;
  updatedAt: string;
}

/** A connector's client as the flow uses it, its secret opened. */
export interface OAuthClient extends TokenClient {
  provider: string;
  authorizeUrl: string;
  scopes: string[];
  authorizeParams: Record<string, string>;
  pkce: boolean;
}

type ClientRow = Selectable<IntegrationOAuthClientsTable>;

const secretAad = (provider: string) => `oauth-client:${provider}`;

export class OAuthClients {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly sealer: Sealer | null,
  ) {}

  /** Sets a connector's client (400 for an integration that is not a connector, 404 for none). */
  async put(provider: string, input: OAuthClientInput, updatedBy: string | null): Promise<OAuthClientView> {
    await requireConnector(this.db, provider);
    if (input.clientSecret && !this.sealer) {
      throw new ConnectorOAuthError(
        400,
        'INVALID_REQUEST',
        'Storing a client secret needs SERVICE_STORE_ENCRYPTION_KEY on the platform',
      );
    }
    const sealedSecret =
      input.clientSecret === undefined
        ? undefined
        : input.clientSecret === null
          ? null
          : this.sealer!.seal(input.clientSecret, secretAad(provider));
    const values = {
      authorize_url: input.authorizeUrl,
      token_url: input.tokenUrl,
      revocation_url: input.revocationUrl ?? null,
      client_id: input.clientId,
      scopes: JSON.stringify(input.scopes ?? []),
      authorize_params: JSON.stringify(input.authorizeParams ?? {}),
      pkce: input.pkce ?? true,
      token_auth_method: input.tokenAuthMethod ?? 'client_secret_basic',
      updated_by: updatedBy,
      updated_at: new Date(),
    };
    const row = await this.db
      .insertInto('integration_oauth_clients')
      .values({ provider, ...values, client_secret_ciphertext: sealedSecret ?? null })
      .onConflict((oc) =>
        oc.column('provider').doUpdateSet({
          ...values,
          ...(sealedSecret !== undefined ? { client_secret_ciphertext: sealedSecret } : {}),
        }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
    return viewOf(row);
  }

  async view(provider: string): Promise<OAuthClientView | null> {
    const row = await this.row(provider);
    return row ? viewOf(row) : null;
  }

  async remove(provider: string): Promise<boolean> {
    const removed = await this.db
      .deleteFrom('integration_oauth_clients')
      .where('provider', '=', provider)
      .executeTakeFirst();
    return removed.numDeletedRows > 0n;
  }

  /**
   * The client a flow uses: 404 for an unknown integration, 400 for one that is not a connector
   * or has no client configured.
   */
  async forFlow(provider: string): Promise<OAuthClient> {
    await requireConnector(this.db, provider);
    const row = await this.row(provider);
    if (!row) {
      throw new ConnectorOAuthError(
        400,
        'OAUTH_NOT_CONFIGURED',
        `The ${provider} integration has no OAuth client configured`,
      );
    }
    return this.clientOf(row);
  }

  /** The client of a provider whose connections already exist, or null when it was removed. */
  async find(provider: string): Promise<OAuthClient | null> {
    const row = await this.row(provider);
    return row ? this.clientOf(row) : null;
  }

  private row(provider: string): Promise<ClientRow | undefined> {
    return this.db
      .selectFrom('integration_oauth_clients')
      .selectAll()
      .where('provider', '=', provider)
      .executeTakeFirst();
  }

  private clientOf(row: ClientRow): OAuthClient {
    let clientSecret: string | null = null;
    if (row.client_secret_ciphertext) {
      if (!this.sealer) throw new Error('An OAuth client secret is sealed but no encryption key is set');
      clientSecret = this.sealer.open(row.client_secret_ciphertext, secretAad(row.provider));
    }
    return {
      provider: row.provider,
      authorizeUrl: row.authorize_url,
      tokenUrl: row.token_url,
      revocationUrl: row.revocation_url,
      clientId: row.client_id,
      clientSecret,
      authMethod: row.token_auth_method,
      scopes: row.scopes,
      authorizeParams: row.authorize_params,
      pkce: row.pkce,
    };
  }
}

/** 404 for an integration that does not exist or is disabled; 400 for one that is not a connector. */
export async function requireConnector(db: Kysely<Database>, provider: string): Promise<{ name: string }> {
  const integration = await db
    .selectFrom('integrations')
    .select(['name', 'kind', 'enabled'])
    .where('provider', '=', provider)
    .executeTakeFirst();
  if (!integration?.enabled) {
    throw new ConnectorOAuthError(404, 'NOT_FOUND', `Unknown integration: ${provider}`);
  }
  if (integration.kind !== 'connector') {
    throw new ConnectorOAuthError(
      400,
      'NOT_A_CONNECTOR',
      `The ${provider} integration is not a connector; it is not connected by OAuth`,
    );
  }
  return { name: integration.name };
}

function viewOf(row: ClientRow): OAuthClientView {
  return {
    provider: row.provider,
    authorizeUrl: row.authorize_url,
    tokenUrl: row.token_url,
    revocationUrl: row.revocation_url,
    clientId: row.client_id,
    hasClientSecret: row.client_secret_ciphertext !== null,
    scopes: row.scopes,
    authorizeParams: row.authorize_params,
    pkce: row.pkce,
    tokenAuthMethod: row.token_auth_method,
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}
