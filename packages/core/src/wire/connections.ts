/**
 * The wire's connections: the third-party accounts a user connects (a CRM, a calendar ...). The
 * wire does not hold them itself: a `WireConnections` source does, either the host's own
 * (`kind: 'byo'`) or the platform's (`kind: 'cloud'`). The wire hosts no OAuth callback: the host
 * names its own `callbackUrl` on initiate, and the client polls `GET /connections/:id`.
 *
 * @see docs/wire.md "Connections"
 */
import type { Principal } from '../agent/tools.js';

export type WireConnectionStatus = 'pending' | 'connected' | 'needs_reauth' | 'failed' | 'revoked';

export interface WireConnection {
  /** `con_...` or the source's own id; at most 128 characters of `[A-Za-z0-9_.:-]`. */
  id: string;
  provider: string;
  status: WireConnectionStatus;
  /** What the user sees (the account's name or email), when known. */
  displayName: string | null;
  /** Why a connection failed or needs the user, fit to show. */
  error: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface WireCatalogEntry {
  provider: string;
  name: string;
  description: string | null;
  category: string | null;
  logoUrl: string | null;
}

export interface InitiateInput {
  provider: string;
  /** Where the provider's flow ends: the host's own page (the wire hosts no callback). */
  callbackUrl: string;
}

export interface Initiated {
  /** The new connection, `pending` until the flow completes. */
  connection: WireConnection;
  /** Where to send the user's browser; null when the source connected without a browser. */
  authorizeUrl: string | null;
}

/** A source of connections. Every call is for one principal: never answer another's. */
export interface WireConnections {
  readonly kind: 'byo' | 'cloud';
  catalog(principal: Principal): Promise<WireCatalogEntry[]>;
  list(principal: Principal): Promise<WireConnection[]>;
  /** Null when `provider` is not in this principal's catalog. */
  initiate(principal: Principal, input: InitiateInput): Promise<Initiated | null>;
  /** Null when this principal has no such connection. */
  get(principal: Principal, id: string): Promise<WireConnection | null>;
  /** The connection as it is after disconnecting (`revoked`); null when there is no such one. */
  disconnect(principal: Principal, id: string): Promise<WireConnection | null>;
}

/** Whether `value` looks like a connections source (checked when the service is composed). */
export function isWireConnections(value: unknown): value is WireConnections {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    (v.kind === 'byo' || v.kind === 'cloud') &&
    ['catalog', 'list', 'initiate', 'get', 'disconnect'].every((m) => typeof v[m] === 'function')
  );
}
