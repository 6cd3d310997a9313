export { MANAGED_PROFILE, type StoredCredential } from './credentials.js';
export { ConnectionError } from './errors.js';
export { runtimeConnections } from './runtime.js';
export {
  bindConnection,
  type ConnectionPatch,
  type ConnectionRow,
  type ConnectionsDeps,
  type CreateConnectionInput,
  createConnection,
  getConnection,
  listConnections,
  mintConnectionKey,
  revokeConnection,
  unbindConnection,
  updateConnection,
} from './service.js';
export { TenantConnections } from './tenant-connections.js';
