/**
 * Loads the MCP door only when a composition asks for it, so the wire carries no door code
 * (and no MCP SDK) otherwise.
 */
import type { AuditLog } from '../agent/audit.js';
import type { ActAs, ToolRegistry } from '../agent/tools.js';
import type { Consent as DoorConsent } from '../door/storage/clients.js';
import type { Logger } from '../http/logger.js';
import type { Store } from '../store/index.js';
import { CompositionError } from './options.js';

/** A user's standing consent to an MCP client: the door's own record (a type only, no door code). */
export type { Consent as DoorConsent } from '../door/storage/clients.js';

/** What a host can do about its users' MCP connections: `service.door`. */
export interface ServiceDoor {
  /** The MCP clients a user approved, most recently approved first. */
  consentsOf(subject: string): Promise<DoorConsent[]>;
  /**
   * Withdraws a user's consent to a client and disconnects it: its tokens for the user are revoked
   * and its sessions ended, so its next MCP request is a 401. True when there was a consent.
   */
  withdrawConsent(subject: string, clientId: string): Promise<boolean>;
  /** Revokes every authorization of a user at every client and ends their sessions. */
  revokeUser(subject: string): Promise<void>;
}

/** What the wire needs of the door. */
export interface WireDoor extends ServiceDoor {
  /**
   * The door's answer for one of its paths, or null for any other request. `connection` is what
   * the adapter knows of the TCP peer (per-address limits, such as registration's, need it).
   */
  handle(request: Request, connection?: unknown): Promise<Response | null>;
  /** The door's answer for its origin-root discovery paths, or null. */
  wellKnown(request: Request): Promise<Response | null>;
  /** Writes what the door still holds (queued activity events); the store must still be open. */
  close(): Promise<void>;
}

export interface DoorInput {
  mcp: true | Record<string, unknown>;
  oauth: Record<string, unknown>;
  store: Store;
  tools: ToolRegistry;
  actAs?: ActAs;
  overrides?: unknown;
  logger: Logger;
  /** The wire's audit log: the door's activity joins the same queue. */
  audit: AuditLog;
  env: Record<string, string | undefined>;
}

// A variable specifier: the door is its own entry point, resolved at run time.
const DOOR_MODULE = '../door/index.js';

export async function loadDoor(input: DoorInput): Promise<WireDoor> {
  let module: { createDoor?: (options: unknown) => WireDoor | Promise<WireDoor> };
  try {
    module = await import(/* @vite-ignore */ DOOR_MODULE);
  } catch (error) {
    throw new CompositionError(
      'mcp is set, but the MCP door could not be loaded from this build of @service/core',
      {
        cause: error,
      },
    );
  }
  if (typeof module.createDoor !== 'function') {
    throw new CompositionError('mcp is set, but this build of @service/core has no MCP door (createDoor)');
  }
  return module.createDoor({
    mcp: input.mcp,
    oauth: input.oauth,
    store: input.store,
    tools: input.tools,
    ...(input.actAs ? { actAs: input.actAs } : {}),
    ...(input.overrides ? { overrides: input.overrides } : {}),
    logger: input.logger,
    audit: input.audit,
    env: input.env,
  });
}
