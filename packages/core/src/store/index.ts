export {
  createStore,
  migrateToLatest,
  resolveDataDir,
  type Store,
  type StoreOptions,
} from './create-store.js';
export type * from './database.js';
export {
  IDEMPOTENCY_IN_PROGRESS,
  type IdempotencyRecord,
  IdempotencyRecords,
  type IdempotencyScope,
} from './idempotency.js';
export type { NotificationHandler } from './listener.js';
export { createPGliteDialect } from './pglite-dialect.js';
export { createRateLimitCounter } from './rate-limit-hits.js';
export {
  createSealer,
  generateEncryptionKey,
  parseEncryptionKeys,
  type Sealer,
  SealingError,
} from './sealing.js';
