/** `@service/core/wire`: the embedded application wire a host mounts at `/api/service`. */

export { BLOB_CHUNK_BYTES, type BlobStore, StoreBlobs } from '../agent/blobs.js';
export { S3_PART_BYTES, S3Blobs, type S3BlobsOptions } from '../agent/s3-blobs.js';
export {
  type ActAs,
  type ActAsGrant,
  type AnyHostTool,
  defineTool,
  type HostTool,
  type Principal,
  type ToolContext,
  type ToolInputStream,
  type ToolRisk,
} from '../agent/tools.js';
export { signWebhook } from '../automations/index.js';
export { remixableHashes } from './apps/remixable-hashes.js';
export {
  AWAITING_APPROVAL_TEXT,
  type ChannelBinding,
  ChannelTextRefusedError,
  type OutboundText,
  type Received,
  type TextChannelAdapter,
  TextChannels,
  webhookTextChannel,
} from './channels.js';
export { type CloudConnectionsOptions, cloudConnections } from './cloud-connections.js';
export type {
  Initiated,
  InitiateInput,
  WireCatalogEntry,
  WireConnection,
  WireConnectionStatus,
  WireConnections,
} from './connections.js';
export { BASE_PATH } from './context.js';
export { createService, type Service } from './create-service.js';
export { WIRE_ERROR_CODES, type WireErrorCode } from './errors.js';
export {
  type AppReplayer,
  type AppReplayStep,
  type AppSeed,
  type AppsOptions,
  CompositionError,
  DEFAULT_MAX_FILE_BYTES,
  type DeclaredSlot,
  type FilesOptions,
  type PrincipalResolver,
  type ServiceOptions,
} from './options.js';
export type { WireOrg, WireOrgMember, WireOrgs } from './orgs.js';
