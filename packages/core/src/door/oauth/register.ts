/**
 * RFC 7591 dynamic client registration: public clients only. Errors reaching the client:
 * `invalid_redirect_uri`, `invalid_client_metadata` (400), a 413 for an oversized body, and a
 * 429 `rate_limit_exceeded` past the per-address limit.
 *
 * @see RFC 7591 §2, §3.2
 */
import { jsonDepthProblem, jsonValueProblem } from '../../http/input-guard.js';
import { countableAddress } from '../client-address.js';
import type { DoorContext } from '../context.js';
import { preflight, withCors } from '../cors.js';
import { type ClientMetadata, clientMetadataSchema, NOT_A_JSON_OBJECT } from './client-metadata.js';
import { OAuthError, oauthErrorResponse, oauthJson } from './errors.js';
import { readCapped } from './form.js';

const MAX_REGISTRATION_BYTES = 16 * 1024;

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
    const accepted = acceptMetadata(await readMetadata(request));
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
  const address = countableAddress(context, request, connection);
  if (rule === null || address === null) return null;
  const verdict = await context.limiter.hit(`door-register:${address}`, rule);
  return verdict.allowed ? null : verdict.retryAfterSeconds;
}

/**
 * The JSON body under the shared input guard: refused when it is not JSON, nests deeper than the
 * cap (checked before parsing) or holds text the store cannot keep, in a key or a value.
 */
async function readMetadata(request: Request): Promise<unknown> {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new OAuthError('invalid_client_metadata', 'Content-Type must be application/json');
  }
  const text = await readCapped(request, MAX_REGISTRATION_BYTES);
  const tooDeep = jsonDepthProblem(text);
  if (tooDeep) throw new OAuthError('invalid_client_metadata', tooDeep);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new OAuthError('invalid_client_metadata', NOT_A_JSON_OBJECT);
  }
  if (jsonValueProblem(body, 'body') !== null) {
    throw new OAuthError(
      'invalid_client_metadata',
      'Metadata must not contain NUL characters or invalid Unicode',
    );
  }
  return body;
}

/** The metadata the door registers, or the first problem with it as the client's error. */
function acceptMetadata(body: unknown): ClientMetadata {
  const parsed = clientMetadataSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const code = issue.path[0] === 'redirect_uris' ? 'invalid_redirect_uri' : 'invalid_client_metadata';
  throw new OAuthError(code, issue.message);
}
