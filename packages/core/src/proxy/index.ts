export { ConnectionResolver } from './access.js';
export { createProviderProxy, PROXY_PREFIX, type ProviderProxyOptions } from './create-proxy.js';
export type { ProxyEnv } from './env.js';
export {
  type FreeRoute,
  isFreeRoute,
  ProviderCatalog,
  type ProviderConfig,
  type ProviderInput,
  parseFreeRoute,
  upsertProvider,
} from './providers.js';
export { createUsageObserver, type UsageObserver } from './usage.js';
