/**
 * `/token` (RFC 6749 §3.2): the authorization-code grant with PKCE, refresh-token rotation, and
 * the RFC 8693 service-key exchange. Errors reaching the client: `invalid_request`,
 * `invalid_client` (401), `invalid_grant`, `invalid_scope`, `invalid_target`,
 * `unsupported_grant_type`; every answer carries `Cache-Control: no-store`.
 *
 * @see RFC 6749 §4.1.3, §5, §6; RFC 7636 §4.6; RFC 8693 §2
 */
import { isHostUserId } from '../../http/input-guard.js';
import { countableAddress } from '../client-address.js';
import { LIFETIMES, SCOPES } from '../config.js';
import type { DoorContext } from '../context.js';
import { preflight, withCors } from '../cors.js';
import { TOKEN_EXCHANGE_GRANT } from '../discovery.js';
import { withoutOfflineAccess } from '../scopes.js';
import { hashSecret, isWellFormedVerifier, safeEqual, verifiesS256 } from '../secrets.js';
import { type IssuedTokens, splitScopes } from '../storage/token-families.js';
import { namesResource } from '../urls.js';
import { OAuthError, oauthErrorResponse, oauthJson } from './errors.js';
import { isStorableText, readForm, single } from './form.js';

/** The exact texts the door's contract gives. */
export const CODE_INVALID = 'Authorization code is invalid or expired';
export const PKCE_FAILED = 'PKCE verification failed';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const CLIENT_AUTH_FAILED = 'Client authentication failed';
const MAX_SUBJECT_LENGTH = 256;
/** Subjects that are a missing value spelled out, never a user. */
const PLACEHOLDER_SUBJECTS = new Set(['undefined', 'null']);

export async function handleToken(
  context: DoorContext,
  request: Request,
  connection?: unknown,
): Promise<Response> {
  if (request.method === 'OPTIONS') return preflight('POST, OPTIONS');
  if (request.method !== 'POST')
    return withCors(new Response(null, { status: 405, headers: { allow: 'POST, OPTIONS' } }));
  try {
    const form = await readForm(request);
    const grantType = single(form, 'grant_type');
    switch (grantType) {
      case 'authorization_code':
        return withCors(await exchangeCode(context, form, request));
      case 'refresh_token':
        return withCors(await refresh(context, form, request));
      case TOKEN_EXCHANGE_GRANT:
        return withCors(await exchangeServiceKey(context, form, request, connection));
      case null:
        throw new OAuthError('invalid_request', 'grant_type is required');
      default:
        throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported`);
    }
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    // RFC 6749 §5.2: a client that tried HTTP Basic is answered with the Basic challenge.
    const basic =
      error.code === 'invalid_client' && /^basic /i.test(request.headers.get('authorization') ?? '');
    return withCors(
      oauthErrorResponse(
        error,
        basic ? { 'www-authenticate': `Basic realm="${context.config.urls.issuer}"` } : {},
      ),
    );
  }
}

async function exchangeCode(
  context: DoorContext,
  form: URLSearchParams,
  request: Request,
): Promise<Response> {
  const clientId = publicClientId(form, request);
  const code = required(form, 'code');
  const redirectUri = required(form, 'redirect_uri');
  const verifier = required(form, 'code_verifier');
  // A malformed verifier is refused before the lookup, so it does not burn the code.
  if (!isWellFormedVerifier(verifier)) {
    throw new OAuthError('invalid_request', 'code_verifier must be 43 to 128 characters of [A-Za-z0-9-._~]');
  }
  checkResource(context, form);
  if (!(await context.clients.get(clientId)))
    throw new OAuthError('invalid_client', 'Unknown client_id', 401);

  // Claimed at presentation, before the binding and PKCE checks: a second presentation fails.
  const tokens = await context.grants.redeemCode(
    code,
    (grant) => {
      if (grant.clientId !== clientId) {
        throw new OAuthError('invalid_grant', 'Authorization code was issued to another client');
      }
      if (grant.redirectUri !== redirectUri) {
        throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
      }
      if (!verifiesS256(verifier, grant.codeChallenge)) throw new OAuthError('invalid_grant', PKCE_FAILED);
    },
    { accessTtl: LIFETIMES.access, refresh: true },
  );
  if (!tokens) throw new OAuthError('invalid_grant', CODE_INVALID);
  context.logger.info('door.token_issued', { client_id: clientId, grant_type: 'authorization_code' });
  return tokenResponse(tokens);
}

async function refresh(context: DoorContext, form: URLSearchParams, request: Request): Promise<Response> {
  const clientId = publicClientId(form, request);
  const refreshToken = required(form, 'refresh_token');
  const scope = single(form, 'scope');
  // A blank `scope` asks for nothing in particular: the grant's scopes (RFC 6749 §6).
  // `offline_access` alone is as blank: it asks for no scope.
  const scopes = scope === null || withoutOfflineAccess(scope).length === 0 ? null : checkScopes(scope);
  checkResource(context, form);
  const client = await context.clients.get(clientId);
  if (!client) throw new OAuthError('invalid_client', 'Unknown client_id', 401);

  const registered = splitScopes(typeof client.metadata.scope === 'string' ? client.metadata.scope : '');
  const outcome = await context.grants.rotate(refreshToken, {
    clientId,
    scopes,
    registeredScopes: registered.length > 0 ? registered : null,
  });
  if (!outcome.ok) {
    if (outcome.reason === 'scope') {
      throw new OAuthError(
        'invalid_scope',
        'A refresh cannot ask for scopes beyond the grant or the client registration',
      );
    }
    if (outcome.reason === 'reused') {
      context.logger.warn('door.refresh_reuse', { client_id: clientId });
    }
    throw new OAuthError(
      'invalid_grant',
      outcome.reason === 'wrong-client'
        ? 'Refresh token was issued to another client'
        : 'Refresh token is invalid, expired or revoked',
    );
  }
  // A user who no longer resolves loses every authorization, here as on the transport.
  if ((await context.oauth.principal(outcome.subject)) === null) {
    await context.grants.revokeSubject(outcome.subject);
    await context.sessions.endSubject(outcome.subject);
    throw new OAuthError('invalid_grant', 'The user of this grant no longer exists');
  }
  context.logger.info('door.token_issued', {
    client_id: clientId,
    grant_type: 'refresh_token',
    ...(outcome.replayed ? { replayed: true } : {}),
  });
  return tokenResponse(outcome.tokens);
}

/**
 * RFC 8693 service-key exchange: a backend trades its key and one of the host's user ids for a
 * ten-minute access token with no refresh. A wrong client id, an unknown key and a retired key
 * all answer the same `invalid_client`. The user id is not checked here: a token for an unknown
 * user fails on its first MCP request with 401 `invalid_token`.
 */
async function exchangeServiceKey(
  context: DoorContext,
  form: URLSearchParams,
  request: Request,
  connection: unknown,
): Promise<Response> {
  const serviceAuth = context.config.serviceAuth;
  if (!serviceAuth) {
    throw new OAuthError('unsupported_grant_type', 'The service-key exchange is not enabled on this server');
  }
  const { clientId, key } = clientCredentials(form, request);
  const throttled = throttledAddress(context, request, connection);
  // Past its failures' limit, an address is refused before its key is looked at: a right guess
  // then reads as a wrong one.
  const blocked = throttled?.throttle.retryAfter(throttled.address);
  if (blocked) throw tooManyFailures(blocked);
  // Every comparison runs whatever the outcome, so timing does not tell which part was wrong.
  const presented = hashSecret(key ?? '');
  let match: (typeof serviceAuth.keys)[number] | undefined;
  for (const candidate of serviceAuth.keys) {
    if (safeEqual(candidate.hash, presented)) match = candidate;
  }
  const clientOk = safeEqual(clientId ?? '', serviceAuth.clientId);
  if (!clientOk || key === null || !match || match.retired) {
    const wait = throttled && (await throttled.throttle.failed(throttled.address));
    if (wait) throw tooManyFailures(wait);
    throw new OAuthError('invalid_client', CLIENT_AUTH_FAILED, 401);
  }
  const subject = required(form, 'subject_token');
  // Counted as the wire counts a principal's subject: characters, not UTF-16 units.
  if ([...subject].length > MAX_SUBJECT_LENGTH)
    throw new OAuthError('invalid_request', 'subject_token is too long');
  // A backend's unset variable, interpolated, must not become a user id.
  if (subject.trim() === '' || PLACEHOLDER_SUBJECTS.has(subject.trim())) {
    throw new OAuthError('invalid_request', 'subject_token must name a user');
  }
  // A user id the wire would refuse as a principal: refused here, before a token names it.
  if (!isHostUserId(subject)) {
    throw new OAuthError('invalid_request', 'subject_token must not contain control characters');
  }
  // RFC 8693 §2.1: required. Not interpreted: the subject is a host user id, not a token.
  if ((single(form, 'subject_token_type') ?? '').trim() === '') {
    throw new OAuthError('invalid_request', 'subject_token_type is required');
  }
  const scope = single(form, 'scope');
  const scopes = scope === null ? [...SCOPES] : checkScopes(scope);
  checkResource(context, form);
  const tokens = await context.grants.startFamily(
    { clientId: serviceAuth.clientId, subject, scopes, actor: match.actor },
    { accessTtl: LIFETIMES.serviceAccess, refresh: false },
  );
  context.logger.info('door.service_exchange', { actor: match.actor, subject });
  return tokenResponse(tokens, { issued_token_type: ACCESS_TOKEN_TYPE });
}

/**
 * The failed-credential throttle and the address it counts, when both are known: without the
 * adapter's connection info there is no trustworthy address to count.
 */
function throttledAddress(context: DoorContext, request: Request, connection: unknown) {
  const throttle = context.credentialThrottle;
  const address = countableAddress(context, request, connection);
  return throttle && address !== null ? { throttle, address } : null;
}

function tooManyFailures(retryAfterSeconds: number): OAuthError {
  return new OAuthError(
    'rate_limit_exceeded',
    'Too many failed client authentications from this address; retry later',
    429,
    { 'retry-after': String(retryAfterSeconds) },
  );
}

function tokenResponse(tokens: IssuedTokens, extra: Record<string, string> = {}): Response {
  return oauthJson({
    access_token: tokens.accessToken,
    token_type: 'Bearer',
    expires_in: tokens.expiresIn,
    ...(tokens.refreshToken ? { refresh_token: tokens.refreshToken } : {}),
    scope: tokens.scopes.join(' '),
    ...extra,
  });
}

/**
 * client_secret_post fields, or HTTP Basic (RFC 6749 §2.3.1). Both in one request is refused
 * (RFC 6749 §2.3: one authentication method per request).
 */
function clientCredentials(
  form: URLSearchParams,
  request: Request,
): { clientId: string | null; key: string | null } {
  const basic = basicCredentials(request.headers.get('authorization') ?? '');
  if (basic) {
    if (single(form, 'client_secret') !== null) {
      throw new OAuthError(
        'invalid_request',
        'Use one client authentication method: HTTP Basic or client_secret',
      );
    }
    return { clientId: basic.user, key: basic.secret };
  }
  return { clientId: single(form, 'client_id'), key: single(form, 'client_secret') };
}

/**
 * The user and secret of an HTTP Basic header (each form-decoded), or null when the request sent
 * no Basic credentials. Credentials that do not decode (not base64, no `user:` part, a broken
 * percent-encoding) are refused rather than ignored: the client meant to authenticate, and going
 * on with the form's `client_id` would answer as if it had not. The header bypasses the form's
 * text rule, so a NUL character in either (raw or as `%00`) is refused here too, as in a form
 * field, before it reaches a store query.
 */
function basicCredentials(header: string): { user: string; secret: string } | null {
  if (!/^basic(?:\s|$)/i.test(header)) return null;
  const encoded = header.slice(5).trim();
  const decoded = BASE64.test(encoded) ? Buffer.from(encoded, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  const user = colon > 0 ? safeDecode(decoded.slice(0, colon)) : null;
  const secret = colon > 0 ? safeDecode(decoded.slice(colon + 1)) : null;
  if (!user || secret === null) {
    throw new OAuthError(
      'invalid_request',
      'HTTP Basic credentials must be the base64 of "<client_id>:<secret>", each form-encoded',
    );
  }
  if (!isStorableText(user) || !isStorableText(secret)) {
    throw new OAuthError(
      'invalid_request',
      'HTTP Basic credentials contain a NUL character or invalid Unicode',
    );
  }
  return { user, secret };
}

/**
 * A public client's id: the `client_id` field, or the user-id of HTTP Basic (RFC 6749 §2.3.1),
 * which a client that registered for a secret method may send with an empty secret. The door
 * issues no secrets, so a secret sent along proves nothing and is not read. `/revoke` takes the
 * client the same way (RFC 7009 §2.1 defers to RFC 6749 §2.3).
 */
export function publicClientId(form: URLSearchParams, request: Request): string {
  const field = single(form, 'client_id');
  const basic = basicCredentials(request.headers.get('authorization') ?? '')?.user ?? null;
  if (field !== null && basic !== null && field !== basic) {
    throw new OAuthError('invalid_request', 'client_id and the HTTP Basic client differ');
  }
  const clientId = field ?? basic;
  if (clientId === null) {
    throw new OAuthError('invalid_request', 'client_id is required (in the body, or as the HTTP Basic user)');
  }
  return clientId;
}

/** Standard base64 (RFC 4648 §4), padded or not: what RFC 7617 credentials are. */
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function safeDecode(value: string): string | null {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

function required(form: URLSearchParams, name: string): string {
  const value = single(form, name);
  if (value === null) throw new OAuthError('invalid_request', `${name} is required`);
  return value;
}

function checkScopes(scope: string): string[] {
  const scopes = withoutOfflineAccess(scope);
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new OAuthError('invalid_scope', `Unknown scope: ${unknown.join(', ')}`);
  return scopes.length > 0 ? [...new Set(scopes)] : [...SCOPES];
}

/** RFC 8707: a `resource` other than this MCP server is refused. */
function checkResource(context: DoorContext, form: URLSearchParams): void {
  const resource = single(form, 'resource');
  if (resource === null) return;
  if (!namesResource(resource, context.config.urls.resource)) {
    throw new OAuthError('invalid_target', `resource must be ${context.config.urls.resource}`);
  }
}
