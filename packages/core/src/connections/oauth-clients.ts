import type { Kysely, Selectable } from 'kysely';
import { z } from 'zod';
import type { Database, IntegrationOAuthClientsTable, TokenAuthMethod } from '../store/database.js';
import type { Sealer } from '../store/sealing.js';
import { ConnectorOAuthError } from './oauth-errors.js';
import type { TokenClient } from './oauth-token-endpoint.js';

/**
 * https anywhere; plain http only to this machine (local providers, tests). Zod runs the
 * refinements even after `z.url()` refused the value, so they pass what is not a URL at all (that
 * issue is already reported) instead of throwing from `new URL`.
 */
const urlOf = (value: string): URL | null => (URL.canParse(value) ? new URL(value) : null);
const endpoint = z
  .url({ protocol: /^https?$/ })
  .max(2048)
  .refine((value) => {
    const url = urlOf(value);
    return (
      !url ||
      url.protocol === 'https:' ||
      url.hostname === 'localhost' ||
      url.hostname === '127.0.0.1' ||
      url.hostname === '[::1]'
    );
  }, 'must be an https URL (plain http only on localhost)')
  .refine((value) => {
    const url = urlOf(value);
    return !url || (!url.hash && !url.username);
  }, 'must have no fragment or userinfo');

const RESERVED_PARAMS = new Set([
  'response_type',
  'client_id',
  'redirect_uri',
  'state',
  'scope',
  'code_challenge',
  'code_challenge_method',
]);

/** A client as an admin sets it (`PUT`) or `SERVICE_OAUTH_CLIENTS` names it. */
export const oauthClientInputSchema = z.strictObject({
  authorizeUrl: endpoint,
  tokenUrl: endpoint,
  revocationUrl: endpoint.nullable().optional(),
  clientId: z.string().min(1).max(512),
  clientSecret: z.string().min(1).max(4096).nullable().optional(),
  scopes: z
    .array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]{1,256}$/, 'must be an OAuth scope token'))
    .max(100)
    .optional(),
  authorizeParams: z
    .record(z.string().min(1).max(100), z.string().max(1000))
    .refine((params) => Object.keys(params).length <= 20, 'must have at most 20 parameters')
    .refine(
      (params) => Object.keys(params).every((name) => !RESERVED_PARAMS.has(name)),
      'must not set a parameter the flow sets itself (state, redirect_uri, ...)',
    )
    .optional(),
  pkce: z.boolean().optional(),
  tokenAuthMethod: z.enum(['client_secret_basic', 'client_secret_post', 'none']).optional(),
});

/**
 * Each connector integration's OAuth client: where the platform sends users to authorize, where it
 * exchanges and refreshes tokens, and with which client id and secret. The secret is sealed under
 * `oauth-client:<provider>` and never leaves this module except to the token endpoint.
 *
 * Clients named in the environment (`SERVICE_OAUTH_CLIENTS`) take precedence over stored ones and
 * are not changed through the admin API (409): their secret stays in the environment only.
 *
 * @see docs/api/oauth.md "Client configuration"
 */
/** Omitted `clientSecret`: keep the stored secret. Null: none (a public client). */
export type OAuthClientInput = z.infer<typeof oauthClientInputSchema>;

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
  /** Who set it: an admin (through the API) or the environment. */
  source: 'admin' | 'environment';
  /** Null for a client from the environment. */
  updatedAt: string | null;
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
    /** Clients from the environment, by provider slug. */
    private readonly fromEnv: ReadonlyMap<string, OAuthClientInput> = new Map(),
  ) {}

  /** Sets a connector's client (400 for an integration that is not a connector, 404 for none). */
  async put(provider: string, input: OAuthClientInput, updatedBy: string | null): Promise<OAuthClientView> {
    await requireConnector(this.db, provider);
    this.refuseEnvironmentClient(provider);
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
    const env = this.fromEnv.get(provider);
    if (env) {
      const { clientSecret: _secret, ...client } = clientOfInput(provider, env);
      return {
        provider,
        authorizeUrl: client.authorizeUrl,
        tokenUrl: client.tokenUrl,
        revocationUrl: client.revocationUrl,
        clientId: client.clientId,
        hasClientSecret: !!env.clientSecret,
        scopes: client.scopes,
        authorizeParams: client.authorizeParams,
        pkce: client.pkce,
        tokenAuthMethod: client.authMethod,
        source: 'environment',
        updatedAt: null,
      };
    }
    const row = await this.row(provider);
    return row ? viewOf(row) : null;
  }

  async remove(provider: string): Promise<boolean> {
    this.refuseEnvironmentClient(provider);
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
    const env = this.fromEnv.get(provider);
    if (env) return clientOfInput(provider, env);
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
    const env = this.fromEnv.get(provider);
    if (env) return clientOfInput(provider, env);
    const row = await this.row(provider);
    return row ? this.clientOf(row) : null;
  }

  private refuseEnvironmentClient(provider: string): void {
    if (this.fromEnv.has(provider)) {
      throw new ConnectorOAuthError(
        409,
        'CONFIGURED_BY_ENVIRONMENT',
        `The ${provider} client is set by SERVICE_OAUTH_CLIENTS; change it there`,
      );
    }
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
    source: 'admin',
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

function clientOfInput(provider: string, input: OAuthClientInput): OAuthClient {
  return {
    provider,
    authorizeUrl: input.authorizeUrl,
    tokenUrl: input.tokenUrl,
    revocationUrl: input.revocationUrl ?? null,
    clientId: input.clientId,
    clientSecret: input.clientSecret ?? null,
    authMethod: input.tokenAuthMethod ?? 'client_secret_basic',
    scopes: input.scopes ?? [],
    authorizeParams: input.authorizeParams ?? {},
    pkce: input.pkce ?? true,
  };
}
