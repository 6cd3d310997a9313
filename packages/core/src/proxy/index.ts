/** `@service/core/proxy`: registering the upstream providers the metering proxy serves. */
export { PROXY_PREFIX } from './create-proxy.js';
export { type ProviderInput, upsertProvider } from './providers.js';
