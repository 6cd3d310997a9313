/**
 * The database as Kysely sees it: every table of every concern. The table types live in
 * `tables/`, one file per concern, so the store depends on nothing above it.
 */
import type { Insertable, Selectable } from 'kysely';
import type { CatalogTables } from './tables/catalog.js';
import type { ConnectorOAuthTables } from './tables/connector-oauth.js';
import type { DeployTables } from './tables/deploy.js';
import type { DoorTables } from './tables/door.js';
import type { OperatorTables } from './tables/operators.js';
import type {
  ApiKeysTable,
  AppConnectionsTable,
  AppEventsTable,
  AppSpendTable,
  AppsTable,
  CapNoticesTable,
  ConnectionsTable,
  DevIdpKeysTable,
  EventStreamsTable,
  HoldsTable,
  IdempotencyRecordsTable,
  InstancesTable,
  IntegrationsTable,
  InvitationsTable,
  LedgerEntriesTable,
  MembershipsTable,
  MeterRatesTable,
  ProvidersTable,
  PurchasesTable,
  RateLimitHitsTable,
  SessionsTable,
  SpendCapsTable,
  SshSessionsTable,
  TenantsTable,
  UsageEventsTable,
  UsersTable,
  WalletsTable,
} from './tables/platform.js';
import type { StripeTables } from './tables/stripe.js';
import type { WireTables } from './tables/wire.js';

export type * from './tables/catalog.js';
export type * from './tables/connector-oauth.js';
export type * from './tables/deploy.js';
export type * from './tables/door.js';
export type * from './tables/operators.js';
export type * from './tables/platform.js';
export type * from './tables/stripe.js';
export type * from './tables/wire.js';

export interface Database
  extends WireTables,
    DoorTables,
    OperatorTables,
    StripeTables,
    CatalogTables,
    ConnectorOAuthTables,
    DeployTables {
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
  app_connections: AppConnectionsTable;
  providers: ProvidersTable;
  meter_rates: MeterRatesTable;
  holds: HoldsTable;
  usage_events: UsageEventsTable;
  spend_caps: SpendCapsTable;
  app_spend: AppSpendTable;
  cap_notices: CapNoticesTable;
  app_events: AppEventsTable;
  event_streams: EventStreamsTable;
  idempotency_records: IdempotencyRecordsTable;
  ssh_sessions: SshSessionsTable;
  instances: InstancesTable;
  purchases: PurchasesTable;
  invitations: InvitationsTable;
}

export type Tenant = Selectable<TenantsTable>;
export type User = Selectable<UsersTable>;
export type ApiKey = Selectable<ApiKeysTable>;
export type NewApiKey = Insertable<ApiKeysTable>;
