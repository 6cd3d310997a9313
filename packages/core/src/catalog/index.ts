/** The catalog: integrations and tenants' toggles of them, deployable tools and their releases, public pricing. */
export {
  CATALOG_CHANGED_CHANNEL,
  type CatalogPart,
  followCatalogChanges,
  notifyCatalogChanged,
} from './changes.js';
export {
  BYOK_STATIC_PROFILE,
  type TenantIntegrationState,
  tenantIntegrationStates,
} from './tenant-integrations.js';
