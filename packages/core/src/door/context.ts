import type { AuditLog } from '../agent/audit.js';
import type { GrantStore } from '../agent/grants.js';
import type { ActAs, ToolRegistry } from '../agent/tools.js';
import type { FailedCredentialThrottle } from '../http/credential-throttle.js';
import type { Logger } from '../http/logger.js';
import type { RateLimiter } from '../http/rate-limit.js';
import type { DoorConfig, DoorOAuthAdapter, DoorOverrides } from './config.js';
import type { ClientStore } from './storage/clients.js';
import type { DoorSessionStore } from './storage/sessions.js';
import type { TokenFamilyStore } from './storage/token-families.js';

/**
 * Everything an endpoint module needs, built once per door: domain services, never the database,
 * so an endpoint cannot run SQL of its own.
 */
export interface DoorContext {
  config: DoorConfig;
  /** The wire's remembered approvals: a tool that needs approval runs from the door only under one. */
  approvalGrants: GrantStore;
  /** Activity events of tool calls (the wire's `/activity`), written in batches. */
  audit: AuditLog;
  oauth: DoorOAuthAdapter;
  clients: ClientStore;
  /** Codes and token families: the door's OAuth grants (not the wire's remembered approvals). */
  grants: TokenFamilyStore;
  sessions: DoorSessionStore;
  tools: ToolRegistry | null;
  actAs: ActAs | null;
  overrides: DoorOverrides;
  logger: Logger;
  now: () => number;
  fetch: typeof fetch;
  /** Per-address counters (`/register`), shared by every instance through the store. */
  limiter: RateLimiter;
  /** Failed service keys per address (`/token`), over the same counters; null when unlimited. */
  credentialThrottle: FailedCredentialThrottle | null;
}
