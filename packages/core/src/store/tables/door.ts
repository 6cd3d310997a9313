/**
 * Kysely types of the door's tables (migration 0004-door). Merged into the store's `Database`.
 * Codes, tokens, transaction ids, CSRF tokens, session ids and federation nonces are stored only
 * as SHA-256 hex.
 *
 * @see docs/storage.md, docs/door.md
 */
import type { CreatedAt, Json, NullableTimestamp, Timestamp, Touched } from './columns.js';

/** A dynamically registered public OAuth client. */
export interface DoorClientsTable {
  client_id: string;
  client_name: string | null;
  redirect_uris: Json<string[]>;
  /** The registered client metadata as `/register` answered it. */
  metadata: Json<Record<string, unknown>>;
  /** The door it registered at (its canonical MCP URL); null: honoured by every door. */
  resource: string | null;
  created_at: CreatedAt;
}

/** A consent page waiting for approve or deny. */
export interface DoorConsentTransactionsTable {
  id_hash: string;
  csrf_hash: string;
  client_id: string;
  subject: string;
  redirect_uri: string;
  state: string | null;
  code_challenge: string;
  /** Space-separated OAuth scopes. */
  scopes: string;
  resource: string | null;
  expires_at: Timestamp;
  claimed_at: NullableTimestamp;
  created_at: CreatedAt;
}

/** A user's recorded consent to one client. */
export interface DoorConsentsTable {
  /** The door the consent was given at (its canonical MCP URL). */
  resource: string;
  subject: string;
  client_id: string;
  scopes: string;
  created_at: CreatedAt;
  updated_at: Touched;
}

/** One authorization (a code exchange or a service-key exchange) and, through tokens, its lineage. */
export interface DoorGrantFamiliesTable {
  id: string;
  client_id: string;
  subject: string;
  scopes: string;
  resource: string | null;
  /** `svc:<hash8>` for the service-key exchange; null for user authorizations. */
  actor: string | null;
  created_at: CreatedAt;
  revoked_at: NullableTimestamp;
}

/** An authorization code; `family_id` names the family its exchange creates. */
export interface DoorCodesTable {
  code_hash: string;
  family_id: string;
  client_id: string;
  subject: string;
  redirect_uri: string;
  code_challenge: string;
  scopes: string;
  resource: string | null;
  expires_at: Timestamp;
  claimed_at: NullableTimestamp;
  created_at: CreatedAt;
}

/** An access or refresh token. */
export interface DoorTokensTable {
  token_hash: string;
  kind: 'access' | 'refresh';
  family_id: string;
  expires_at: Timestamp;
  /** Refresh tokens: when it was exchanged for its successor. */
  rotated_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  /** Access tokens narrowed by a refresh: their space-separated scopes; null: the family's. */
  scopes: string | null;
  /**
   * Rotated refresh tokens, during the grace window: the pair they were rotated to, sealed under a
   * key derived from the refresh token itself; cleared when the successor is first used.
   */
  successor_sealed: string | null;
  /** Refresh tokens issued by a rotation: the hash of the token they replaced. */
  parent_hash: string | null;
  created_at: CreatedAt;
}

/** Federation request `jti`s already answered, kept until they expire. */
export interface DoorFederationNoncesTable {
  jti_hash: string;
  expires_at: Timestamp;
}

/** A Streamable HTTP session, bound to one subject and client. */
export interface DoorSessionsTable {
  id_hash: string;
  /** The door the session was opened at (its canonical MCP URL). */
  resource: string | null;
  subject: string;
  client_id: string;
  created_at: CreatedAt;
  ended_at: NullableTimestamp;
}

export interface DoorTables {
  door_clients: DoorClientsTable;
  door_consent_transactions: DoorConsentTransactionsTable;
  door_consents: DoorConsentsTable;
  door_grant_families: DoorGrantFamiliesTable;
  door_codes: DoorCodesTable;
  door_tokens: DoorTokensTable;
  door_federation_nonces: DoorFederationNoncesTable;
  door_sessions: DoorSessionsTable;
}
