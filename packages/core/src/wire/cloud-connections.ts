/**
 * The `cloud` connections source: a host's users' connections kept by the platform, reached with
 * the host app's App Key. Each user is named to the platform by their subject; the platform keeps
 * every user's connections apart and runs the provider's sign-in, sending the browser back to
 * the host's `callbackUrl` (on an origin registered for the app) when it ends.
 *
 * @see docs/wire.md "Connections"
 */
import type { Principal } from '../agent/tools.js';
import type { Initiated, WireCatalogEntry, WireConnection, WireConnections } from './connections.js';
import { WireError } from './errors.js';

export interface CloudConnectionsOptions {
  /** The platform's URL (`SERVICE_BASE_URL` of the platform). */
  platformUrl: string;
  /** The host app's App Key (`service_sk_...`). */
  appKey: string;
  /** How long a call to the platform may take, default 10 s. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** A connections source backed by the platform's connections (`/status` says `connections: "cloud"`). */
export function cloudConnections(options: CloudConnectionsOptions): WireConnections {
  const base = options.platformUrl.replace(/\/+$/, '');
  const send = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;

  /** The platform's answer: its body, null for a 404, else a `connections_unavailable` refusal. */
  async function call<T>(method: string, path: string, body?: unknown): Promise<T | null> {
    let response: Response;
    try {
      response = await send(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${options.appKey}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch {
      throw new WireError(
        'connections_unavailable',
        'The connections platform did not answer; try again shortly.',
      );
    }
    if (response.status === 404) return null;
    const parsed = (await response.json().catch(() => null)) as (T & { message?: string }) | null;
    if (response.ok && parsed) return parsed;
    if (response.status === 400 && parsed?.message) throw new WireError('validation_failed', parsed.message);
    throw new WireError(
      'connections_unavailable',
      response.status === 401
        ? "The connections platform refused this app's key."
        : `The connections platform answered ${response.status}.`,
    );
  }
  const userPath = (principal: Principal) => {
    if (isDotSegment(principal.subject)) {
      throw new WireError(
        'validation_failed',
        `A user id of "${principal.subject}" cannot name a user to the connections platform: a URL path reads it as a step up the path. Give such a user another id.`,
      );
    }
    return `/api/deployments/me/users/${encodeURIComponent(principal.subject)}/connections`;
  };
  /** A connection of the user's; an id that is a dot segment names none (nothing is asked). */
  const connectionPath = (principal: Principal, id: string) =>
    isDotSegment(id) ? null : `${userPath(principal)}/${encodeURIComponent(id)}`;

  return {
    kind: 'cloud',
    async catalog() {
      const answer = await call<{ connectors: WireCatalogEntry[] }>('GET', '/api/deployments/me/connectors');
      return answer?.connectors ?? [];
    },
    async list(principal) {
      const answer = await call<{ connections: WireConnection[] }>('GET', userPath(principal));
      return answer?.connections ?? [];
    },
    async initiate(principal, input) {
      return call<Initiated>('POST', userPath(principal), {
        provider: input.provider,
        callbackUrl: input.callbackUrl,
      });
    },
    async get(principal, id) {
      const path = connectionPath(principal, id);
      const answer = path ? await call<{ connection: WireConnection }>('GET', path) : null;
      return answer?.connection ?? null;
    },
    async disconnect(principal, id) {
      const path = connectionPath(principal, id);
      const answer = path ? await call<{ connection: WireConnection }>('DELETE', path) : null;
      return answer?.connection ?? null;
    },
  };
}

/**
 * `.` and `..`: every URL parser, `fetch`'s included, resolves such a path segment (percent-encoded
 * too), so `/users/../connections` would reach the app's own connections.
 */
function isDotSegment(value: string): boolean {
  return value === '.' || value === '..';
}
