export { ConnectionResolver } from './access.js';
export { createProviderProxy, PROXY_PREFIX, type ProviderProxyOptions } from './create-proxy.js';
export {
  type FreeRoute,
  isFreeRoute,
  type MeterRate,
  ProviderCatalog,
  type ProviderConfig,
  type ProviderInput,
  parseFreeRoute,
  upsertProvider,
} from './providers.js';
export { createUsageObserver, type Quantities, type UsageObserver } from './usage.js';
