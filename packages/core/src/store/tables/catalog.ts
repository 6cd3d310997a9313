/** Tables of the catalog: tenants' integration toggles, the tools tenants deploy, and their releases. */
import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt, Defaulted, DefaultedJson, Json, NullableJson, Touched } from './columns.js';
import type { ReleaseArtifact } from './deploy.js';

/**
 * What an integration is for, where the platform treats it specially: the LLM gateway (its usage
 * payload, a bring-your-own-key connection counts as enabled), speech synthesis and transcription
 * (enabling writes a managed-pool connection), a connector (a third-party account the tenant
 * connects by OAuth or key); any other metered service is `service`.
 */
export type IntegrationKind = 'service' | 'llm_gateway' | 'speech_synthesis' | 'transcription' | 'connector';

/** A tenant's own switch for one integration; no row means the tenant never set it. */
export interface TenantIntegrationsTable {
  tenant_id: string;
  provider: string;
  enabled: boolean;
  updated_by: string | null;
  updated_at: Touched;
}

/** A deployable tool of the catalog (`owner_tenant_id` null), or a tenant's own tool. */
export interface ToolsTable {
  id: Generated<string>;
  slug: string;
  name: string;
  description: Defaulted<string>;
  category: Defaulted<string>;
  /** Null: the platform's generated icon. */
  icon_url: string | null;
  auth_mode: Defaulted<string>;
  source_repo: Defaulted<string>;
  enabled: Defaulted<boolean>;
  /** Marketing data: hidden from non-admin listings of deployable tools. */
  internal: Defaulted<boolean>;
  /** Lists every enabled integration as optional, not only those its release declares. */
  surface_all_connections: Defaulted<boolean>;
  owner_tenant_id: string | null;
  created_at: CreatedAt;
  updated_at: Touched;
}

export type ReleaseStatus = 'active' | 'superseded' | 'withdrawn';

/** One input the deploy wizard asks for; its value reaches the deployment as an environment variable. */
export interface WizardInputRow {
  key: string;
  label: string;
  type: string;
  required: boolean;
}

/** A published version of a tool; at most one per tool is active. */
export interface ToolReleasesTable {
  id: Generated<string>;
  tool_id: string;
  version: string;
  /** The manifest (`service.yaml`) the release was published from, as parsed. */
  manifest: Json<Record<string, unknown>>;
  wizard_inputs: DefaultedJson<WizardInputRow[]>;
  /** The wizard layout as published; validated again when read (an invalid one reads as null). */
  wizard_layout: ColumnType<unknown, string | null | undefined, string | null>;
  required_integrations: DefaultedJson<string[]>;
  optional_integrations: DefaultedJson<string[]>;
  status: Defaulted<ReleaseStatus>;
  /** What the release runs (added by the deployments migration); null: not deployable by the local deployer. */
  artifact: NullableJson<ReleaseArtifact>;
  published_by: string | null;
  created_at: CreatedAt;
}

export interface CatalogTables {
  tenant_integrations: TenantIntegrationsTable;
  tools: ToolsTable;
  tool_releases: ToolReleasesTable;
}
