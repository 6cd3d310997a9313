/**
 * `@service/core/door`: the MCP door, an OAuth 2.1 authorization server and MCP server that lets
 * outside agents call a host's tools as the signed-in user.
 *
 * @see docs/door.md
 */
export {
  type AuthorizeContext,
  type ConsentForm,
  DoorConfigError,
  type DoorMcpOptions,
  type DoorOAuthAdapter,
  type DoorOptions,
  type DoorTheme,
  type RemoteAsOptions,
  type ServiceAuthOptions,
  type ServiceKeyEntry,
  type SessionResult,
} from './config.js';
export { createDoor, type Door } from './create-door.js';

import { mintSecret } from './secrets.js';

/** A fresh key for `mcp.serviceAuth.keys`: `mcp_svc_` plus 32 random bytes (base64url). */
export function mintServiceKey(): string {
  return mintSecret('mcp_svc_');
}
