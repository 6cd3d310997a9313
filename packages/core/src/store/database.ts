import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

/** A timestamp column: read as Date, written as Date or ISO string, defaulted by the database. */
type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** A column the database defaults: optional on insert. */
type Defaulted<T> = ColumnType<T, T | undefined, T>;
/** jsonb: read as parsed JSON, written as a JSON string (both drivers accept text for jsonb). */
type Json<T> = ColumnType<T, string, string>;
/** jsonb with a database default. */
type DefaultedJson<T> = ColumnType<T, string | undefined, string>;

export type TenantStatus = 'active' | 'suspended';
export type MembershipRole = 'owner' | 'member' | 'viewer';
export type KeyKind = 'app' | 'connection' | 'cli';
export type LedgerKind = 'reload' | 'purchase' | 'settle' | 'grant' | 'usage';
export type ConnectionStatus = 'connected' | 'needs_reauth' | 'revoked' | 'error';

export interface TenantsTable {
  id: Generated<string>;
  name: string;
  status: Defaulted<TenantStatus>;
  created_at: CreatedAt;
}

export interface UsersTable {
  id: Generated<string>;
  /** The identity provider's `sub`, as issued (a UUID for the hosted IdP). */
  idp_subject: string;
  email: string | null;
  name: string | null;
  default_tenant_id: string | null;
  created_at: CreatedAt;
}

export interface MembershipsTable {
  tenant_id: string;
  user_id: string;
  role: MembershipRole;
  created_at: CreatedAt;
}

export interface WalletsTable {
  tenant_id: string;
  /** Integer USD micros. May be negative when in-flight metered calls overdraw. */
  balance_micros: Defaulted<number>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface LedgerEntriesTable {
  id: Generated<number>;
  tenant_id: string;
  /** Signed integer micros: credits positive, debits negative. */
  amount_micros: number;
  kind: LedgerKind;
  /** Unique per tenant: a retried operation with the same key is applied once. */
  idempotency_key: string;
  balance_after_micros: number;
  description: string | null;
  created_at: CreatedAt;
}

export interface AppsTable {
  id: Generated<string>;
  tenant_id: string;
  slug: string;
  name: string;
  created_at: CreatedAt;
}

export interface IntegrationsTable {
  id: Generated<string>;
  provider: string;
  name: string;
  description: Defaulted<string>;
  category: Defaulted<string>;
  enabled: Defaulted<boolean>;
  default_profile: Defaulted<string>;
  supported_profiles: DefaultedJson<string[]>;
  logo_url: Defaulted<string>;
  docs_url: Defaulted<string>;
  icon_name: string | null;
  env_bootstrap: DefaultedJson<{ vars: Array<{ name: string; value_from: string }>; restart: string }>;
  created_at: CreatedAt;
}

export interface ConnectionsTable {
  id: Generated<string>;
  tenant_id: string;
  provider: string;
  profile: string;
  status: ConnectionStatus;
  display_name: string;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface ApiKeysTable {
  id: Generated<string>;
  tenant_id: string;
  kind: KeyKind;
  app_id: string | null;
  connection_id: string | null;
  user_id: string | null;
  /** SHA-256 of the whole key, lowercase hex. The key itself is never stored. */
  key_hash: string;
  /** First 12 characters of the key, for display. */
  prefix: string;
  name: string | null;
  created_at: CreatedAt;
  revoked_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
}

export interface SessionsTable {
  id: Generated<string>;
  /** SHA-256 of the cookie value, lowercase hex. */
  token_hash: string;
  user_id: string;
  created_at: CreatedAt;
  expires_at: Timestamp;
}

export interface RateLimitHitsTable {
  bucket: string;
  window_start: Timestamp;
  hits: number;
}

export interface DevIdpKeysTable {
  kid: string;
  private_jwk: Json<Record<string, unknown>>;
  public_jwk: Json<Record<string, unknown>>;
  created_at: CreatedAt;
}

export interface Database {
  tenants: TenantsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  wallets: WalletsTable;
  ledger_entries: LedgerEntriesTable;
  apps: AppsTable;
  integrations: IntegrationsTable;
  connections: ConnectionsTable;
  api_keys: ApiKeysTable;
  sessions: SessionsTable;
  rate_limit_hits: RateLimitHitsTable;
  dev_idp_keys: DevIdpKeysTable;
}

export type Tenant = Selectable<TenantsTable>;
export type User = Selectable<UsersTable>;
export type ApiKey = Selectable<ApiKeysTable>;
export type NewApiKey = Insertable<ApiKeysTable>;
