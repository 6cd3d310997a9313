/**
 * RFC 7591 dynamic client registration: public clients only. Errors reaching the client:
 * `invalid_redirect_uri`, `invalid_client_metadata` (400), a 413 for an oversized body, and a
 * 429 `rate_limit_exceeded` past the per-address limit.
 *
 * @see RFC 7591 §2, §3.2; platform-spec.md "MCP door endpoints"
 */
import { clientIp, socketAddress } from '../../http/client-ip.js';
import { SCOPES } from '../config.js';
import type { DoorContext } from '../context.js';
import { preflight, withCors } from '../cors.js';
import { OAuthError, oauthErrorResponse, oauthJson } from './errors.js';
import { isStorableText, readCapped } from './form.js';
import { redirectUriProblem } from './redirect-uri.js';

const MAX_REGISTRATION_BYTES = 16 * 1024;
const MAX_REDIRECT_URIS = 10;
const MAX_TEXT = 200;
const GRANT_TYPES = new Set(['authorization_code', 'refresh_token']);
/** Secret-based methods are answered as `none`: the door issues no client secrets (RFC 7591 §3.2.1). */
const AUTH_METHODS = new Set(['none', 'client_secret_basic', 'client_secret_post']);

export async function handleRegister(
  context: DoorContext,
  request: Request,
  connection?: unknown,
): Promise<Response> {
  // Browser clients (the MCP Inspector) preflight their JSON post.
  if (request.method === 'OPTIONS') return preflight('POST, OPTIONS');
  if (request.method !== 'POST') {
    return withCors(new Response(null, { status: 405, headers: { allow: 'POST, OPTIONS' } }));
  }
  const wait = await overRegistrationLimit(context, request, connection);
  if (wait !== null) {
    return withCors(
      oauthErrorResponse(
        new OAuthError('rate_limit_exceeded', 'Too many registrations from this address; retry later', 429),
        { 'retry-after': String(wait) },
      ),
    );
  }
  try {
    const metadata = await readMetadata(request);
    const accepted = acceptMetadata(metadata);
    const client = await context.clients.register({
      clientName: accepted.client_name ?? null,
      redirectUris: accepted.redirect_uris,
      metadata: (clientId, issuedAt) => ({ client_id: clientId, client_id_issued_at: issuedAt, ...accepted }),
    });
    context.logger.info('door.client_registered', { client_id: client.clientId });
    return withCors(oauthJson(client.metadata, 201));
  } catch (error) {
    if (error instanceof OAuthError) return withCors(oauthErrorResponse(error));
    throw error;
  }
}

/**
 * Counts a registration against the caller's address; the seconds to wait when over the limit,
 * else null. Without the adapter's connection info there is no trustworthy address to count.
 */
async function overRegistrationLimit(
  context: DoorContext,
  request: Request,
  connection: unknown,
): Promise<number | null> {
  const rule = context.config.registrationLimit;
  if (rule === null || socketAddress(connection) === undefined) return null;
  const address = clientIp(request, connection, { trustedProxies: context.config.trustedProxies });
  const verdict = await context.limiter.hit(`door-register:${address}`, rule);
  return verdict.allowed ? null : verdict.retryAfterSeconds;
}

async function readMetadata(request: Request): Promise<Record<string, unknown>> {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new OAuthError('invalid_client_metadata', 'Content-Type must be application/json');
  }
  const text = await readCapped(request, MAX_REGISTRATION_BYTES);
  let body: unknown;
  let unstorable = false;
  try {
    body = JSON.parse(text, (_key, value: unknown) => {
      if (typeof value === 'string' && !isStorableText(value)) unstorable = true;
      return value;
    });
  } catch {
    throw new OAuthError('invalid_client_metadata', 'Request body must be a JSON object');
  }
  if (unstorable) {
    throw new OAuthError(
      'invalid_client_metadata',
      'Metadata must not contain NUL characters or invalid Unicode',
    );
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new OAuthError('invalid_client_metadata', 'Request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

interface AcceptedMetadata {
  redirect_uris: string[];
  client_name?: string;
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
  scope?: string;
  client_uri?: string;
  logo_uri?: string;
  software_id?: string;
  software_version?: string;
}

/** The metadata the door registers: validated, unknown members dropped, secrets refused. */
function acceptMetadata(body: Record<string, unknown>): AcceptedMetadata {
  const uris = body.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0) {
    throw new OAuthError('invalid_redirect_uri', 'redirect_uris is required: a non-empty array of URLs');
  }
  if (uris.length > MAX_REDIRECT_URIS) {
    throw new OAuthError(
      'invalid_redirect_uri',
      `At most ${MAX_REDIRECT_URIS} redirect_uris may be registered`,
    );
  }
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OAuthError('invalid_redirect_uri', problem);
  }
  const accepted: AcceptedMetadata = {
    redirect_uris: [...new Set(uris as string[])],
    grant_types: stringList(body.grant_types, 'grant_types', ['authorization_code', 'refresh_token']),
    response_types: stringList(body.response_types, 'response_types', ['code']),
    token_endpoint_auth_method: 'none',
  };
  for (const grant of accepted.grant_types) {
    if (!GRANT_TYPES.has(grant)) {
      throw new OAuthError('invalid_client_metadata', `grant_types: ${grant} is not supported`);
    }
  }
  if (!accepted.grant_types.includes('authorization_code')) {
    throw new OAuthError('invalid_client_metadata', 'grant_types must include authorization_code');
  }
  if (accepted.response_types.some((type) => type !== 'code')) {
    throw new OAuthError('invalid_client_metadata', 'response_types may only be ["code"]');
  }
  const method = body.token_endpoint_auth_method;
  if (method !== undefined && (typeof method !== 'string' || !AUTH_METHODS.has(method))) {
    throw new OAuthError(
      'invalid_client_metadata',
      'token_endpoint_auth_method must be none (public clients)',
    );
  }
  const name = text(body.client_name, 'client_name');
  if (name !== undefined) accepted.client_name = name;
  if (body.scope !== undefined) {
    const scope = text(body.scope, 'scope') ?? '';
    const unknown = scope.split(' ').filter((s) => s && !(SCOPES as readonly string[]).includes(s));
    if (unknown.length > 0) {
      throw new OAuthError('invalid_client_metadata', `scope: unknown scope ${unknown.join(', ')}`);
    }
    if (scope) accepted.scope = scope;
  }
  for (const field of ['client_uri', 'logo_uri'] as const) {
    const value = text(body[field], field, 2000);
    if (value === undefined) continue;
    if (!/^https:\/\//i.test(value) || !URL.canParse(value)) {
      throw new OAuthError('invalid_client_metadata', `${field} must be an https URL`);
    }
    accepted[field] = value;
  }
  for (const field of ['software_id', 'software_version'] as const) {
    const value = text(body[field], field);
    if (value !== undefined) accepted[field] = value;
  }
  return accepted;
}

function stringList(value: unknown, field: string, fallback: string[]): string[] {
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || value.length === 0 || value.some((v) => typeof v !== 'string')) {
    throw new OAuthError('invalid_client_metadata', `${field} must be a non-empty array of strings`);
  }
  return [...new Set(value as string[])];
}

function text(value: unknown, field: string, max = MAX_TEXT): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new OAuthError('invalid_client_metadata', `${field} must be a string`);
  const trimmed = value.trim();
  if (trimmed.length > max)
    throw new OAuthError('invalid_client_metadata', `${field} is too long (at most ${max})`);
  return trimmed.length > 0 ? trimmed : undefined;
}
