/**
 * The door's composition options and their validation. Everything wrong with a composition (no
 * canonical URL, a blank `remoteAs` issuer, an empty service-key list, federation without a
 * secret) fails here, at start, with a `DoorConfigError` naming what to fix.
 *
 * @see docs/door.md "Configuration"
 */
import type { Kysely } from 'kysely';
import type { AuditLog } from '../agent/audit.js';
import type { ActAs, Principal, ToolRegistry } from '../agent/tools.js';
import { FAILED_CREDENTIALS_RULE } from '../http/credential-throttle.js';
import type { Logger } from '../http/logger.js';
import type { RateLimitRule } from '../http/rate-limit.js';
import type { Store } from '../store/create-store.js';
import type { Database } from '../store/database.js';
import { DoorConfigError } from './config-error.js';
import { hashSecret, serviceActor } from './secrets.js';
import { allowedOriginsFor, type DoorUrls, doorUrlsFor } from './urls.js';

/** What the host's sign-in answers: the signed-in user, or a response (a redirect to sign in). */
export type SessionResult = { subject: string } | Response;

/** The consent form the door expects back: a page that replaces ours posts these three fields. */
export interface ConsentForm {
  /** Where the form posts (the door's `/authorize`). */
  action: string;
  /** Value of the `transaction` field. */
  transaction: string;
  /** Value of the `csrf_token` field. */
  csrfToken: string;
  /**
   * Where the browser is sent back to, as a CSP source a page's `form-action` must allow: the
   * redirect URI's origin, or `scheme:` for an app's own scheme (`cursor:`).
   */
  redirectOrigin: string;
}

export interface AuthorizeContext {
  /** Attacker-controllable (it comes from dynamic registration): HTML-escape it. */
  clientName: string;
  scopes: string[];
  /** The consent form to render; null for a federation handshake, which has no consent step. */
  consent: ConsentForm | null;
}

/**
 * The host's OAuth adapter.
 *
 * - `session` + `principal` (+ optional `authorize`): the door owns consent. `authorize`, when
 *   given, renders the consent page in the host's own look (posting `transaction`, `csrf_token`,
 *   `decision=approve|deny` to `consent.action`); the door checks CSRF and single use.
 * - Legacy: `authorize` + `principal` without `session`. `authorize` owns sign-in, consent, CSRF
 *   and replay protection and answers `{ subject }` once the user has approved.
 */
export interface DoorOAuthAdapter {
  session?(request: Request, context: { returnTo: string }): Promise<SessionResult> | SessionResult;
  /** The live principal of a subject, or null (deleted, suspended): re-asked on every MCP request. */
  principal(subject: string): Promise<Principal | null> | Principal | null;
  authorize?(request: Request, context: AuthorizeContext): Promise<SessionResult> | SessionResult;
}

export interface RemoteAsOptions {
  /** The external authorization server's issuer (`iss` of its tokens). */
  issuer: string;
  /** The `aud` its tokens carry for this door. */
  audience: string;
  /** Default `{issuer}/.well-known/jwks.json`. */
  jwksUri?: string;
}

/** A service key: the key itself, or `{ key, retired: true }` for one that must stop working. */
export type ServiceKeyEntry = string | { key: string; retired?: boolean };

export interface ServiceAuthOptions {
  keys: ServiceKeyEntry[];
  /** The `client_id` a backend presents with its key. Default `service`. */
  clientId?: string;
}

export interface DoorTheme {
  /** CSS colour of buttons and links. Default `#2f5bea`. */
  accent?: string;
  /** CSS colour of the page background. Default `#f6f7f9`. */
  background?: string;
}

export interface DoorMcpOptions {
  /** Public URL of the host (with any path prefix). Default `SERVICE_BASE_URL`. */
  baseUrl?: string;
  /** Shown on the consent and connect pages and in the server card. Default `MCP server`. */
  productName?: string;
  theme?: DoorTheme;
  /** Accept JWTs from an external authorization server instead of issuing tokens. */
  remoteAs?: RemoteAsOptions;
  /** Enables the RFC 8693 service-key exchange at `/token`. */
  serviceAuth?: ServiceAuthOptions;
  /** Enables `/federate` (secret from `SERVICE_MCP_FEDERATION_SECRET` unless given). */
  federation?: boolean | { secret?: string };
  /**
   * Origins of browser pages allowed to call the MCP endpoint besides the door's own (e.g. a web
   * MCP client's). A request from any other page is refused 403; native clients send no Origin.
   */
  allowedOrigins?: string[];
  /**
   * How long a rotated refresh token still answers the pair it was rotated to (parallel
   * refreshes, a retry after a lost answer), unless that pair's refresh token was used meanwhile.
   * 0 to 300000; 0 makes every second presentation a reuse. Default 30000 ms.
   */
  refreshGraceMs?: number;
  /** No refresh token outlives its authorization by more than this. 1 hour to 365 days. Default 90 days. */
  refreshMaxAgeMs?: number;
}

/**
 * How the door reaches a client ID metadata document: the addresses a host name resolves to, and
 * a GET of the document from one of them (redirects not followed, `signal` honoured). The door
 * checks every address before anything is fetched.
 */
export interface ClientDocumentTransport {
  resolve(hostname: string): Promise<string[]>;
  fetch(url: URL, address: string, signal: AbortSignal): Promise<Response>;
}

/** Overrides that shape the door's menu (`.service/overrides.json`). */
export { DoorConfigError };

export interface DoorOverrides {
  /** `surfaces.mcp`: the shorter menu, by tool name. Unset lists every eligible tool. */
  surfaces?: { agent?: string[]; mcp?: string[] };
  /** Per-tool titles. */
  tools?: Record<string, { title?: string }>;
}

export interface DoorOptions {
  /** `true` or options; the door exists only when this is set. */
  mcp: true | DoorMcpOptions;
  oauth: DoorOAuthAdapter;
  /** The store; with its `listen`, revocations made on other instances apply here at once. */
  store: { db: Kysely<Database>; listen?: Store['listen'] };
  tools?: ToolRegistry;
  /** How tools called from the door reach the host's API as the user. Unset: tools answer `not-implemented`. */
  actAs?: ActAs;
  /** `.service/overrides.json` as parsed JSON (validated here). */
  overrides?: DoorOverrides | unknown;
  logger?: Logger;
  /**
   * Where the door's activity events go. The wire passes its own, so `/activity` and shutdown see
   * one queue; a door on its own writes through one it makes (flushed by `close()`).
   */
  audit?: AuditLog;
  /** Environment to read `SERVICE_*` from. Default `process.env`. */
  env?: Record<string, string | undefined>;
  now?: () => number;
  /** Used for remote JWKS fetches. */
  fetch?: typeof fetch;
  /**
   * How client ID metadata documents are reached. For tests only: the default resolves the host
   * name with the system resolver and fetches over HTTPS from the very address it checked.
   */
  clientDocumentTransport?: ClientDocumentTransport;
  /**
   * How long a verified access token, a session binding and a consent record are trusted without
   * asking the store. Revocations made on this instance apply at once, and reach the others
   * through the store's notifications; a withdrawn consent or an ended session reaches them
   * within this bound. Default 2000 ms.
   */
  authCacheTtlMs?: number;
  /** How often a long tool call sends a progress notification (when the client asked). Default 15 s. */
  progressIntervalMs?: number;
  /**
   * Dynamic registrations admitted per client address (`false`: unlimited). Applies when the
   * adapter passes its connection info to `handle(request, connection)`. Default 60 a minute.
   */
  registrationLimit?: RateLimitRule | false;
  /**
   * Failed service keys at the token endpoint admitted per client address before it is refused
   * for the rest of the window, a right key too (`false`: unlimited). Applies when the adapter
   * passes its connection info. Default 30 a minute, as the platform's keys.
   */
  failedCredentialLimit?: RateLimitRule | false;
  /**
   * Reverse proxies in front of the host that append to `X-Forwarded-For`. Default
   * `SERVICE_TRUSTED_PROXIES`, else 0 (the header is ignored: the socket address counts).
   */
  trustedProxies?: number;
}

export interface ServiceKey {
  hash: string;
  retired: boolean;
  actor: string;
}

export type DoorMode = 'local' | 'remote' | 'broker';

export interface DoorConfig {
  urls: DoorUrls;
  /** The door's own origin and `mcp.allowedOrigins`, as browsers spell an `Origin` header. */
  allowedOrigins: string[];
  productName: string;
  theme: Required<DoorTheme>;
  /** `local`: the door is the authorization server; `remote`/`broker`: tokens come from elsewhere. */
  mode: DoorMode;
  remoteAs: Required<RemoteAsOptions> | null;
  serviceAuth: { clientId: string; keys: ServiceKey[] } | null;
  federationSecret: Uint8Array | null;
  registrationLimit: RateLimitRule | null;
  failedCredentialLimit: RateLimitRule | null;
  trustedProxies: number;
  refreshGraceMs: number;
  refreshMaxAgeMs: number;
}

/** Token and code lifetimes (seconds). */
export const LIFETIMES = {
  code: 60,
  access: 60 * 60,
  refresh: 30 * 24 * 60 * 60,
  serviceAccess: 10 * 60,
  transaction: 10 * 60,
  federationRequestMaxAhead: 5 * 60,
  federationAssertion: 60,
} as const;

/**
 * A rotated refresh token stays usable this long, answering the pair it was rotated to, so a
 * client racing itself or retrying a lost answer is not logged out. Default of `refreshGraceMs`.
 */
export const REFRESH_GRACE_MS = 30_000;
/** No refresh token outlives its authorization by more than this. Default of `refreshMaxAgeMs`. */
export const REFRESH_MAX_AGE_MS = 90 * 24 * 60 * 60 * 1000;

/** Scopes the door grants. `write` is needed for every tool not labelled `read`. */
export const SCOPES = ['read', 'write'] as const;

const MIN_SECRET_LENGTH = 32;

export function resolveDoorConfig(options: DoorOptions): DoorConfig {
  const env = options.env ?? process.env;
  const mcp: DoorMcpOptions = options.mcp === true ? {} : (options.mcp ?? {});
  if (!options.oauth || typeof options.oauth.principal !== 'function') {
    throw new DoorConfigError(
      'The MCP door needs an `oauth` host adapter with a `principal(subject)` function',
    );
  }
  if (typeof options.oauth.session !== 'function' && typeof options.oauth.authorize !== 'function') {
    throw new DoorConfigError(
      'The `oauth` adapter needs `session(request, { returnTo })` or a legacy `authorize`',
    );
  }
  const baseUrl = mcp.baseUrl ?? blankToUndefined(env.SERVICE_BASE_URL);
  if (!baseUrl) {
    throw new DoorConfigError(
      'The MCP door needs a canonical URL: set SERVICE_BASE_URL or mcp.baseUrl (forwarded host headers are never trusted)',
      'E-MCP-009',
    );
  }
  const urls = doorUrlsFor(baseUrl);

  const brokerUrl = blankToUndefined(env.SERVICE_MCP_BROKER_URL);
  const explicit = mcp.remoteAs !== undefined || mcp.serviceAuth !== undefined;
  // `mcp: true` (or options naming neither remoteAs nor serviceAuth) with the variable set: hosted broker.
  const broker = brokerUrl !== undefined && !explicit;
  let mode: DoorMode = 'local';
  let remoteAs: DoorConfig['remoteAs'] = null;
  if (mcp.remoteAs !== undefined) {
    remoteAs = checkRemoteAs(mcp.remoteAs);
    mode = 'remote';
  } else if (broker) {
    remoteAs = checkRemoteAs({ issuer: checkBrokerUrl(brokerUrl), audience: urls.resource });
    mode = 'broker';
  }

  const federationWanted = mcp.federation !== undefined && mcp.federation !== false;
  let federationSecret: Uint8Array | null = null;
  if (federationWanted || broker) {
    const given = typeof mcp.federation === 'object' ? mcp.federation.secret : undefined;
    const secret = given ?? blankToUndefined(env.SERVICE_MCP_FEDERATION_SECRET);
    if (!secret || secret.trim().length < MIN_SECRET_LENGTH) {
      throw new DoorConfigError(
        `Federation needs SERVICE_MCP_FEDERATION_SECRET of at least ${MIN_SECRET_LENGTH} characters`,
      );
    }
    federationSecret = new TextEncoder().encode(secret);
  }

  return {
    urls,
    allowedOrigins: allowedOriginsFor(urls, mcp.allowedOrigins),
    productName: mcp.productName?.trim() || 'MCP server',
    theme: {
      accent: checkColour(mcp.theme?.accent, '#2f5bea', 'accent'),
      background: checkColour(mcp.theme?.background, '#f6f7f9', 'background'),
    },
    mode,
    remoteAs,
    serviceAuth: mcp.serviceAuth === undefined ? null : checkServiceAuth(mcp.serviceAuth),
    federationSecret,
    registrationLimit:
      options.registrationLimit === false ? null : (options.registrationLimit ?? REGISTRATION_LIMIT),
    failedCredentialLimit:
      options.failedCredentialLimit === false
        ? null
        : (options.failedCredentialLimit ?? FAILED_CREDENTIALS_RULE),
    trustedProxies: checkTrustedProxies(options.trustedProxies ?? env.SERVICE_TRUSTED_PROXIES),
    refreshGraceMs: checkDuration('mcp.refreshGraceMs', mcp.refreshGraceMs, REFRESH_GRACE_MS, 0, 5 * MINUTE),
    refreshMaxAgeMs: checkDuration(
      'mcp.refreshMaxAgeMs',
      mcp.refreshMaxAgeMs,
      REFRESH_MAX_AGE_MS,
      HOUR,
      365 * DAY,
    ),
  };
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

function checkDuration(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new DoorConfigError(`${name} must be a whole number of milliseconds from ${min} to ${max}`);
  }
  return value;
}

/** Default cap on dynamic registrations: one MCP client registers once per install. */
export const REGISTRATION_LIMIT: RateLimitRule = { limit: 60, windowMs: 60_000 };

function checkTrustedProxies(value: number | string | undefined): number {
  if (value === undefined || value === '') return 0;
  const hops = Number(value);
  if (!Number.isInteger(hops) || hops < 0 || hops > 10) {
    throw new DoorConfigError('SERVICE_TRUSTED_PROXIES (trustedProxies) must be an integer from 0 to 10');
  }
  return hops;
}

function checkRemoteAs(options: RemoteAsOptions): Required<RemoteAsOptions> {
  const issuer = typeof options?.issuer === 'string' ? options.issuer.trim() : '';
  const audience = typeof options?.audience === 'string' ? options.audience.trim() : '';
  if (!issuer) throw new DoorConfigError('mcp.remoteAs.issuer must not be blank');
  if (!audience) throw new DoorConfigError('mcp.remoteAs.audience must not be blank');
  const jwksUri = options.jwksUri?.trim() || `${issuer.replace(/\/+$/, '')}/.well-known/jwks.json`;
  if (!URL.canParse(jwksUri)) throw new DoorConfigError(`mcp.remoteAs.jwksUri is not a URL: ${jwksUri}`);
  return { issuer, audience, jwksUri };
}

function checkBrokerUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new DoorConfigError('SERVICE_MCP_BROKER_URL is not a URL');
  }
  const loopback = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new DoorConfigError('SERVICE_MCP_BROKER_URL must be https (http only on loopback)');
  }
  return value.replace(/\/+$/, '');
}

function checkServiceAuth(options: ServiceAuthOptions): DoorConfig['serviceAuth'] {
  if (!Array.isArray(options?.keys) || options.keys.length === 0) {
    throw new DoorConfigError('mcp.serviceAuth.keys must list at least one key');
  }
  const keys = options.keys.map((entry, index) => {
    const key = typeof entry === 'string' ? entry : entry?.key;
    if (typeof key !== 'string' || key.trim() === '') {
      throw new DoorConfigError(`mcp.serviceAuth.keys[${index}] is blank`);
    }
    if (key.length < MIN_SECRET_LENGTH) {
      throw new DoorConfigError(
        `mcp.serviceAuth.keys[${index}] is shorter than ${MIN_SECRET_LENGTH} characters`,
      );
    }
    return {
      hash: hashSecret(key),
      retired: typeof entry === 'object' && entry.retired === true,
      actor: serviceActor(key),
    };
  });
  const clientId = options.clientId?.trim() || 'service';
  return { clientId, keys };
}

function checkColour(value: string | undefined, fallback: string, name: string): string {
  if (value === undefined) return fallback;
  // Written into a style sheet: only plain colour syntax, never anything that could close it.
  if (!/^(#[0-9a-fA-F]{3,8}|[a-zA-Z]{3,20}|(rgb|hsl)a?\([0-9.,%\s]+\))$/.test(value)) {
    throw new DoorConfigError(`mcp.theme.${name} must be a CSS colour (#hex, a name, rgb() or hsl())`);
  }
  return value;
}

function blankToUndefined(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
