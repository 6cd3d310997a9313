/**
 * `@service/core/door`: the MCP door, an OAuth 2.1 authorization server and MCP server that lets
 * outside agents call a host's tools as the signed-in user.
 *
 * @see docs/door.md
 */
export {
  type AuthorizeContext,
  type ConsentForm,
  type DoorConfig,
  DoorConfigError,
  type DoorMcpOptions,
  type DoorMode,
  type DoorOAuthAdapter,
  type DoorOptions,
  type DoorOverrides,
  type DoorTheme,
  LIFETIMES,
  type RemoteAsOptions,
  resolveDoorConfig,
  SCOPES,
  type ServiceAuthOptions,
  type ServiceKeyEntry,
  type SessionResult,
} from './config.js';
export { createDoor, type Door } from './create-door.js';
export {
  authorizationServerMetadata,
  protectedResourceMetadata,
  type ServerCard,
  serverCard,
  TOKEN_EXCHANGE_GRANT,
} from './discovery.js';
export { type BearerAuthenticator, bearerChallenge, bearerOf, type DoorCaller } from './mcp/bearer.js';
export { REMOTE_AS_ALGORITHMS } from './mcp/remote-as.js';
export { OAuthError, type OAuthErrorCode } from './oauth/errors.js';
export { mintSecret, serviceActor } from './secrets.js';
export type { DoorToolContext, DoorToolErrorCode } from './tool-call.js';
export { annotationsFor } from './tool-menu.js';
export { canonicalBaseUrl, type DoorUrls, doorUrlsFor, WIRE_BASE_PATH } from './urls.js';

import { mintSecret } from './secrets.js';

/** A fresh key for `mcp.serviceAuth.keys`: `mcp_svc_` plus 32 random bytes (base64url). */
export function mintServiceKey(): string {
  return mintSecret('mcp_svc_');
}
