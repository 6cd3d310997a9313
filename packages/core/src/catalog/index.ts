/** The catalog: integrations and tenants' toggles of them, deployable tools and their releases, public pricing. */
export {
  CATALOG_CHANGED_CHANNEL,
  type CatalogPart,
  followCatalogChanges,
  notifyCatalogChanged,
} from '../store/catalog-changes.js';
export {
  CATALOG_SLUG,
  integrationDocsOf,
  integrationDocsUrl,
  integrationLogoOf,
  integrationLogoUrl,
  monogramSvg,
  toolIconUrl,
} from './icons.js';
export {
  type IntegrationInfo,
  Integrations,
  PUBLIC_INTEGRATIONS_TTL_MS,
  type PublicIntegration,
  type TenantIntegration,
} from './integrations.js';
export {
  MODELS_TTL_MS,
  ModelCatalogError,
  type ModelPrice,
  type PricingIntegration,
  PublicPricing,
  type PublicRate,
  type PublicRateTable,
} from './pricing.js';
export {
  type PublishedRelease,
  type PublishReleaseInput,
  type PublishResult,
  publishRelease,
  RELEASE_VERSION_PATTERN,
  withdrawRelease,
} from './releases.js';
export {
  BYOK_STATIC_PROFILE,
  type TenantIntegrationState,
  tenantIntegrationStates,
} from './tenant-integrations.js';
export {
  type CatalogTool,
  type CatalogViewer,
  DEFAULT_HIDDEN_TOOL_PREFIX,
  DEPLOYABLE_CACHE_MS,
  type DeployableTool,
  type IntegrationRequirement,
  TOOL_CATALOG_CACHE_MS,
  ToolCatalog,
  type ToolChanges,
  type ToolDetail,
  USAGE_FRAMING_CACHE_MS,
} from './tools.js';
export { callsLabel, USAGE_FRAMING_PRESETS_USD, type UsageFramingEntry } from './usage-framing.js';
