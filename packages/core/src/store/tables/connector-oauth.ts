/** Tables of connector OAuth: each connector's OAuth client and the authorizations in flight. */
import type { ColumnType } from 'kysely';
import type { CreatedAt, Defaulted, DefaultedJson, Timestamp, Touched } from './columns.js';

/** How the platform authenticates to a provider's token endpoint (RFC 6749 §2.3, RFC 7591 names). */
export type TokenAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

/** The OAuth client the platform uses for one connector integration. */
export interface IntegrationOAuthClientsTable {
  provider: string;
  authorize_url: string;
  token_url: string;
  /** RFC 7009 endpoint; null when the provider has none (disconnecting then forgets tokens locally). */
  revocation_url: string | null;
  client_id: string;
  /** AES-256-GCM sealed under `oauth-client:<provider>`; null for public clients. */
  client_secret_ciphertext: string | null;
  scopes: DefaultedJson<string[]>;
  /** Extra query parameters of the authorize URL (for example `access_type=offline`). */
  authorize_params: DefaultedJson<Record<string, string>>;
  pkce: Defaulted<boolean>;
  token_auth_method: Defaulted<TokenAuthMethod>;
  /** Email of the admin who last set it (null when set from a script). */
  updated_by: string | null;
  updated_at: Touched;
}

/**
 * An authorization in flight: the state (stored only as its SHA-256) a provider hands back to the
 * callback, with whom it was started for, its PKCE verifier (sealed) and where to go afterwards.
 * Deleted when claimed, so it works once.
 */
export interface OAuthStatesTable {
  state_hash: string;
  tenant_id: string;
  /** The platform user who started it; null for a host app's own user's flow (`end_user`). */
  user_id: string | null;
  provider: string;
  code_verifier_ciphertext: string | null;
  return_to: string | null;
  /** Bind the new connection to this app. */
  app_id: string | null;
  /** Reconnect this connection instead of making a new one. */
  connection_id: string | null;
  /** A host app's user the flow is for, and the flow the host polls. */
  end_user: ColumnType<string | null, string | null | undefined, string | null>;
  flow_id: ColumnType<string | null, string | null | undefined, string | null>;
  expires_at: Timestamp;
  created_at: CreatedAt;
}

/** A host app's user connecting a provider through the platform: what the host polls. */
export interface EndUserFlowsTable {
  id: string;
  tenant_id: string;
  app_id: string;
  end_user: string;
  provider: string;
  status: 'pending' | 'connected' | 'failed' | 'revoked';
  connection_id: string | null;
  error: string | null;
  created_at: CreatedAt;
  updated_at: Touched;
  expires_at: Timestamp;
}

export interface ConnectorOAuthTables {
  integration_oauth_clients: IntegrationOAuthClientsTable;
  oauth_states: OAuthStatesTable;
  end_user_flows: EndUserFlowsTable;
}
