/** Tables of the platform: tenants and people, keys, wallets and the ledger, providers and metering, connections, events. */
import type { ColumnType, Generated } from 'kysely';
import type { IntegrationKind } from './catalog.js';
import type {
  CreatedAt,
  Defaulted,
  DefaultedJson,
  Json,
  NullableTimestamp,
  Timestamp,
  Touched,
} from './columns.js';

export type TenantStatus = 'active' | 'suspended';
export type MembershipRole = 'owner' | 'member' | 'viewer';
export type KeyKind = 'app' | 'connection' | 'cli';
export type LedgerKind = 'reload' | 'purchase' | 'settle' | 'grant' | 'usage' | 'refund' | 'adjustment';
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
  updated_at: Touched;
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
  /** The app's last event sequence number; bumped under a row lock by each emitter. */
  event_seq: Defaulted<number>;
  /** The catalog tool the app runs, and which of its releases; null for an app made by hand. */
  tool_id: ColumnType<string | null, string | null | undefined, string | null>;
  release_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Origins (`https://host.example`) an end user's connection flow may send the browser back to. */
  callback_origins: DefaultedJson<string[]>;
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
  kind: Defaulted<IntegrationKind>;
  created_at: CreatedAt;
  updated_at: Touched;
}

export interface ConnectionsTable {
  id: Generated<string>;
  tenant_id: string;
  provider: string;
  profile: string;
  status: ConnectionStatus;
  display_name: string;
  metadata: DefaultedJson<Record<string, unknown>>;
  /** The connection's own credential (bring your own key, OAuth tokens), AES-256-GCM sealed. */
  credential_ciphertext: string | null;
  error_message: string | null;
  setup_url: string | null;
  connected_at: NullableTimestamp;
  /** An exclusive connection may be bound to one app only. */
  exclusive: Defaulted<boolean>;
  /** When an OAuth connection's access token expires (null: no expiry known, or no token). */
  token_expires_at: NullableTimestamp;
  /** A refresh in progress holds the connection until then, so a refresh token is used once. */
  refresh_claimed_until: NullableTimestamp;
  /** A host app's own user the connection belongs to (the wire's `cloud` source); null: the workspace's. */
  end_user: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  updated_at: Touched;
}

export interface AppConnectionsTable {
  app_id: string;
  connection_id: string;
  tenant_id: string;
  created_at: CreatedAt;
}

export type ProviderDialect = 'openai' | 'anthropic' | 'per_call';
export type MeterName = 'call' | 'input_tokens' | 'output_tokens';

export interface ProvidersTable {
  slug: string;
  upstream_url: string;
  dialect: ProviderDialect;
  /** Header the managed-pool credential goes in, and its scheme ('' for the bare value). */
  auth_header: Defaulted<string>;
  auth_scheme: Defaulted<string>;
  credential_ciphertext: string | null;
  /** `METHOD /path-prefix` rules of calls that pass unmetered, even at zero balance. */
  free_routes: DefaultedJson<string[]>;
  /** Credit held by a call whose cost is known only from its response. */
  hold_micros: Defaulted<number>;
  /** Overrides MARGIN_PERCENT for this provider; numeric, read as a string. */
  margin_percent: ColumnType<string | null, string | number | null | undefined, string | number | null>;
  enabled: Defaulted<boolean>;
  created_at: CreatedAt;
}

export interface MeterRatesTable {
  provider: string;
  meter: MeterName;
  /** '' prices every model without a row of its own. */
  model: Defaulted<string>;
  /** Micros per unit, exact decimal (numeric), read as a string. */
  unit_price_micros: ColumnType<string, string | number, string | number>;
  public: Defaulted<boolean>;
}

export interface HoldsTable {
  id: string;
  tenant_id: string;
  /** The app whose spend caps the held call counts against, if any. */
  app_id: string | null;
  amount_micros: number;
  /** What the held call can cost at most, when more than its hold; null: its hold. */
  worst_micros: number | null;
  /** The instance that took the hold: it is let go when that instance's heartbeat stops. */
  instance_id: string | null;
  expires_at: Timestamp;
  created_at: CreatedAt;
}

export interface UsageEventsTable {
  id: string;
  tenant_id: string;
  app_id: string | null;
  connection_id: string | null;
  key_id: string | null;
  provider: string;
  model: string | null;
  quantities: Json<Partial<Record<MeterName, number>>>;
  /** Each meter's cost in micros, rounded on its own (the total is rounded once, so may differ by a micro). */
  meter_costs: DefaultedJson<Partial<Record<MeterName, number>>>;
  cost_micros: number;
  ledger_entry_id: number;
  upstream_status: number | null;
  /** True when the cost is the admission estimate (the response never reported usage). */
  estimated: Defaulted<boolean>;
  request_id: string | null;
  created_at: CreatedAt;
}

export type SpendPeriod = 'daily' | 'monthly';

export interface SpendCapsTable {
  app_id: string;
  tenant_id: string;
  daily_micros: number | null;
  monthly_micros: number | null;
  warn_pcts: DefaultedJson<number[]>;
  updated_at: Touched;
}

export interface AppSpendTable {
  app_id: string;
  period: SpendPeriod;
  /** UTC date the window starts (first of the month for monthly windows), `YYYY-MM-DD`. */
  period_start: ColumnType<string, string, string>;
  spent_micros: number;
}

export interface CapNoticesTable {
  app_id: string;
  period: SpendPeriod;
  period_start: ColumnType<string, string, string>;
  /** `warn:<pct>` or `tripped`. */
  notice: string;
  created_at: CreatedAt;
}

export interface AppEventsTable {
  app_id: string;
  seq: number;
  kind: string;
  payload: Json<Record<string, unknown>>;
  created_at: CreatedAt;
}

export interface EventStreamsTable {
  id: string;
  app_id: string;
  /** The instance serving the stream: the slot is freed when that instance's heartbeat stops. */
  instance_id: string | null;
  expires_at: Timestamp;
}

export interface InstancesTable {
  id: string;
  /** Renewed by the instance's heartbeat; past it, the instance counts as dead. */
  alive_until: Timestamp;
  started_at: CreatedAt;
}

export interface IdempotencyRecordsTable {
  tenant_id: string;
  scope: string;
  key: string;
  request_hash: string;
  status: number;
  body: string;
  created_at: CreatedAt;
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
  /** First 16 characters of the key, for display. */
  prefix: string;
  name: string | null;
  created_at: CreatedAt;
  revoked_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
  /** Set when the key was rotated: it stays valid until then (the rotation's overlap). */
  expires_at: NullableTimestamp;
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

/** One-time tokens the developer CLI presents to the ssh broker. */
export interface SshSessionsTable {
  id: Generated<string>;
  tenant_id: string;
  app_id: string;
  user_id: string | null;
  key_id: string | null;
  /** SHA-256 of the one-time token, lowercase hex. */
  token_hash: string;
  created_at: CreatedAt;
  expires_at: Timestamp;
  claimed_at: NullableTimestamp;
}

/** A purchase a payment processor started; `ledger_entry_id` is set once its credit landed. */
export interface PurchasesTable {
  id: Generated<string>;
  tenant_id: string;
  processor: string;
  amount_micros: number;
  created_by: string | null;
  /** Where the buyer is sent once the purchase is done. */
  return_url: string;
  ledger_entry_id: number | null;
  created_at: CreatedAt;
  completed_at: NullableTimestamp;
}

/** Invitations into a workspace: single use, expiring, addressed to one email. */
export interface InvitationsTable {
  id: Generated<string>;
  tenant_id: string;
  /** Lowercased; only a user signed in with this email may accept. */
  email: string;
  role: MembershipRole;
  /** SHA-256 of the accept link's token, lowercase hex. The token itself is never stored. */
  token_hash: string;
  invited_by: string | null;
  created_at: CreatedAt;
  expires_at: Timestamp;
  accepted_at: NullableTimestamp;
  accepted_by: string | null;
  withdrawn_at: NullableTimestamp;
}
