/** `@service/core/store`: the database (PGlite embedded, or Postgres by URL) and its sealing key. */
export {
  createStore,
  createStoreImage,
  resolveDataDir,
  type Store,
  type StoreOptions,
} from './create-store.js';
export type { Database } from './database.js';
export { generateEncryptionKey, SealingError } from './sealing.js';
