/**
 * The door's canonical URLs, derived only from the configured base URL (`SERVICE_BASE_URL` or
 * `mcp.baseUrl`): the Host and X-Forwarded-* headers of a request are never consulted.
 *
 * The MCP URL is both the protected resource and the authorization server's issuer.
 *
 * @see RFC 8414 §3.1, RFC 9728 §3.1, RFC 8707 §2
 */
import { DoorConfigError } from './config-error.js';

/** The wire's fixed base path, under which the door lives. */
export const WIRE_BASE_PATH = '/api/service';

export interface DoorUrls {
  /** `{base}/api/service/mcp`: resource, issuer and `aud` of everything the door issues. */
  resource: string;
  issuer: string;
  origin: string;
  /** Path of the MCP endpoint, e.g. `/api/service/mcp` (with the base URL's prefix, if any). */
  mcpPath: string;
  /** The MCP path without the base URL's prefix, for adapters that strip it. */
  mcpPathUnprefixed: string;
  authorize: string;
  token: string;
  register: string;
  revoke: string;
  federate: string;
  connect: string;
  protectedResourceMetadata: string;
  authorizationServerMetadata: string;
  /** Paths the door answers at the origin root (RFC 9728, RFC 8414 twice, server card twice). */
  wellKnownPaths: {
    protectedResource: string;
    authorizationServer: string;
    /** RFC 8414 without the issuer's path: where MCP 2025-03-26 clients look (local mode only). */
    authorizationServerAtOrigin: string;
    serverCard: string;
    serverCardAlias: string;
  };
}

/**
 * Canonical form of a base URL: scheme and host lowercased, default port dropped, trailing slashes
 * stripped; userinfo, query and fragment refused.
 */
export function canonicalBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new DoorConfigError(`The door's base URL is not a URL: ${value}`, 'E-MCP-009');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new DoorConfigError('The door base URL must be http or https');
  }
  if (url.username || url.password) throw new DoorConfigError('The door base URL must not carry userinfo');
  if (url.search || url.hash)
    throw new DoorConfigError('The door base URL must not carry a query or fragment');
  // URL already lowercases scheme and host and drops default ports.
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/**
 * The origins whose pages may call the MCP endpoint: the door's own, plus the configured ones,
 * each an origin (`https://app.example`, with its port when not the default; no path).
 */
export function allowedOriginsFor(urls: DoorUrls, configured: readonly string[] = []): string[] {
  if (!Array.isArray(configured)) throw new DoorConfigError('mcp.allowedOrigins must be a list of origins');
  const origins = configured.map((value) => {
    const url = URL.canParse(value) ? new URL(value) : null;
    const bare =
      url !== null && url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password;
    if (!bare || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
      throw new DoorConfigError(`mcp.allowedOrigins: ${value} is not an origin like https://app.example`);
    }
    return url.origin;
  });
  return [...new Set([urls.origin, ...origins])];
}

export function doorUrlsFor(baseUrl: string): DoorUrls {
  const base = canonicalBaseUrl(baseUrl);
  const origin = new URL(base).origin;
  const resource = `${base}${WIRE_BASE_PATH}/mcp`;
  const mcpPath = new URL(resource).pathname;
  return {
    resource,
    issuer: resource,
    origin,
    mcpPath,
    mcpPathUnprefixed: `${WIRE_BASE_PATH}/mcp`,
    authorize: `${resource}/authorize`,
    token: `${resource}/token`,
    register: `${resource}/register`,
    revoke: `${resource}/revoke`,
    federate: `${resource}/federate`,
    connect: `${resource}/connect`,
    protectedResourceMetadata: `${origin}/.well-known/oauth-protected-resource${mcpPath}`,
    authorizationServerMetadata: `${origin}/.well-known/oauth-authorization-server${mcpPath}`,
    wellKnownPaths: {
      protectedResource: `/.well-known/oauth-protected-resource${mcpPath}`,
      authorizationServer: `/.well-known/oauth-authorization-server${mcpPath}`,
      authorizationServerAtOrigin: '/.well-known/oauth-authorization-server',
      serverCard: '/.well-known/mcp/server-card.json',
      serverCardAlias: '/.well-known/mcp-server-card',
    },
  };
}

/**
 * Whether a client's `resource` parameter (RFC 8707) names the door's MCP URL: read as a URL
 * (scheme and host in any case, a trailing slash or not), without query or fragment. One rule for
 * `/authorize` and `/token`, which a client sends the same value.
 */
export function namesResource(candidate: string, resource: string): boolean {
  try {
    const url = new URL(candidate);
    if (url.search || url.hash) return false;
    return `${url.origin}${url.pathname.replace(/\/+$/, '')}` === resource;
  } catch {
    return false;
  }
}
