/**
 * `/revoke` (RFC 7009): an empty 200 for every landed revocation, unknown tokens and unknown
 * hints included. 400 with `{ error, error_description }` for a non-form body, a missing `token`
 * or `client_id`, an unresolvable `client_id` (`invalid_client`) and a token issued to another
 * client (`unauthorized_client`). An access token revokes itself; a refresh token retires its
 * whole family and leaves the client's other authorizations.
 *
 * @see RFC 7009 §2
 */
import type { DoorContext } from '../context.js';
import { preflight, withCors } from '../cors.js';
import { OAuthError, oauthErrorResponse } from './errors.js';
import { readForm, single } from './form.js';
import { publicClientId } from './token.js';

export async function handleRevoke(context: DoorContext, request: Request): Promise<Response> {
  if (request.method === 'OPTIONS') return preflight('POST, OPTIONS');
  if (request.method !== 'POST')
    return withCors(new Response(null, { status: 405, headers: { allow: 'POST, OPTIONS' } }));
  try {
    const form = await readForm(request);
    const token = single(form, 'token');
    if (token === null) throw new OAuthError('invalid_request', 'token is required');
    // In the body or as the HTTP Basic user, as at /token.
    const clientId = publicClientId(form, request);
    const serviceClient = context.config.serviceAuth?.clientId;
    if (clientId !== serviceClient && !(await context.clients.get(clientId))) {
      throw new OAuthError('invalid_client', 'Unknown client_id');
    }
    // `token_type_hint` is only a hint (RFC 7009 §2.1): both kinds are looked up either way.
    const outcome = await context.grants.revoke(token, clientId);
    if (outcome === 'wrong-client') {
      throw new OAuthError('unauthorized_client', 'The token was issued to another client');
    }
    // The store clears this instance's cached tokens and tells the other instances.
    if (outcome === 'revoked') context.logger.info('door.token_revoked', { client_id: clientId });
    return withCors(new Response(null, { status: 200, headers: { 'cache-control': 'no-store' } }));
  } catch (error) {
    if (error instanceof OAuthError) return withCors(oauthErrorResponse(error));
    throw error;
  }
}
