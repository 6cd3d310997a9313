/**
 * `@service/core`: the platform's entry points. Each concern has its own subpath
 * (`@service/core/store`, `/platform`, `/wire`, `/door` ...); see the package README.
 */
export { ConfigError, createPlatform, type Platform, type PlatformOptions } from './platform/index.js';
export { createStore, type Store, type StoreOptions } from './store/index.js';
