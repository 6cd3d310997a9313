export {
  createStore,
  migrateToLatest,
  resolveDataDir,
  type Store,
  type StoreOptions,
} from './create-store.js';
export type * from './database.js';
export { createPGliteDialect } from './pglite-dialect.js';
