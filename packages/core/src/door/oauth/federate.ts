/**
 * `GET /federate?request=<compact JWS>`: an external issuer (the hosted broker) asks the door who
 * the browser's user is. The request is HS256 under `SERVICE_MCP_FEDERATION_SECRET` with `iss`,
 * `aud` (the door's canonical URL), `exp` (at most 5 minutes ahead), a fresh `jti`,
 * `redirect_uri` (same origin as `iss`), `scopes` and `client_name`. On a signed-in user the door
 * answers 302 to `redirect_uri` with an `assertion` (HS256, same secret: `sub`, `iss` = door,
 * `aud` = request `iss`, the same `jti`, `exp` 60 s ahead). A login redirect or page from the
 * adapter is forwarded verbatim; errors are JSON 400s: the endpoint renders no HTML of its own.
 */
import { jwtVerify, SignJWT } from 'jose';
import { jsonValueProblem } from '../../http/input-guard.js';
import { LIFETIMES, SCOPES } from '../config.js';
import type { DoorContext } from '../context.js';
import { OAuthError, oauthErrorResponse } from './errors.js';

const MAX_REQUEST_LENGTH = 8192;
/** Clock skew tolerated on `exp` and `iat` between the issuer and us. */
const SKEW_SECONDS = 30;

interface FederationRequest {
  iss: string;
  jti: string;
  redirectUri: string;
  scopes: string[];
  clientName: string;
  exp: number;
}

export async function handleFederate(context: DoorContext, request: Request): Promise<Response> {
  const secret = context.config.federationSecret!;
  if (request.method !== 'GET') return new Response(null, { status: 405, headers: { allow: 'GET' } });
  let federation: FederationRequest;
  try {
    federation = await verifyRequest(context, secret, new URL(request.url).searchParams);
  } catch (error) {
    if (error instanceof OAuthError) return oauthErrorResponse(error);
    throw error;
  }
  const outcome =
    typeof context.oauth.authorize === 'function'
      ? await context.oauth.authorize(request, {
          clientName: federation.clientName,
          scopes: federation.scopes,
          consent: null,
        })
      : await context.oauth.session!(request, {
          returnTo: `${context.config.urls.federate}?${new URL(request.url).searchParams.toString()}`,
        });
  if (outcome instanceof Response) return outcome;

  // Spent only now: a sign-in detour comes back to this URL with the same request.
  const fresh = await context.sessions.spendNonce(federation.jti, new Date(federation.exp * 1000));
  if (!fresh)
    return oauthErrorResponse(new OAuthError('invalid_request', 'This federation request was already used'));
  const now = Math.floor(context.now() / 1000);
  const assertion = await new SignJWT({ jti: federation.jti })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(outcome.subject)
    .setIssuer(context.config.urls.resource)
    .setAudience(federation.iss)
    .setIssuedAt(now)
    .setExpirationTime(now + LIFETIMES.federationAssertion)
    .sign(secret);
  const target = new URL(federation.redirectUri);
  target.searchParams.set('assertion', assertion);
  context.logger.info('door.federated', { issuer: federation.iss });
  return new Response(null, {
    status: 302,
    headers: { location: target.toString(), 'cache-control': 'no-store' },
  });
}

async function verifyRequest(
  context: DoorContext,
  secret: Uint8Array,
  params: URLSearchParams,
): Promise<FederationRequest> {
  const token = params.get('request');
  if (!token) throw new OAuthError('invalid_request', 'request is required');
  if (token.length > MAX_REQUEST_LENGTH) throw new OAuthError('invalid_request', 'request is too long');
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, secret, {
      algorithms: ['HS256'],
      audience: context.config.urls.resource,
      requiredClaims: ['iss', 'aud', 'exp', 'jti'],
      currentDate: new Date(context.now()),
      clockTolerance: SKEW_SECONDS,
    }));
  } catch {
    throw new OAuthError(
      'invalid_request',
      'The federation request is not a valid HS256 JWT for this server',
    );
  }
  // Its text goes on to the adapter (`client_name`) and into the assertion: clean, as all input.
  if (jsonValueProblem(payload, 'request') !== null) {
    throw new OAuthError(
      'invalid_request',
      'The federation request must not contain NUL characters or invalid Unicode',
    );
  }
  const now = Math.floor(context.now() / 1000);
  const exp = payload.exp as number;
  if (exp > now + LIFETIMES.federationRequestMaxAhead + SKEW_SECONDS) {
    throw new OAuthError('invalid_request', 'exp must be at most 5 minutes ahead');
  }
  const iss = payload.iss as string;
  const jti = payload.jti;
  if (typeof jti !== 'string' || jti.length < 16 || jti.length > 200) {
    throw new OAuthError('invalid_request', 'jti must be a fresh nonce of 16 to 200 characters');
  }
  const redirectUri = payload.redirect_uri;
  if (typeof redirectUri !== 'string' || !URL.canParse(redirectUri) || !URL.canParse(iss)) {
    throw new OAuthError('invalid_request', 'redirect_uri and iss must be URLs');
  }
  const redirect = new URL(redirectUri);
  // Only http(s) has an origin to compare: any other scheme's is "null", equal to every other.
  if (redirect.protocol !== 'https:' && redirect.protocol !== 'http:') {
    throw new OAuthError('invalid_request', 'redirect_uri must be an http or https URL');
  }
  if (redirect.origin !== new URL(iss).origin || redirect.hash || redirect.username || redirect.password) {
    throw new OAuthError(
      'invalid_request',
      'redirect_uri must be on the origin of iss, without fragment or userinfo',
    );
  }
  const scopes = payload.scopes;
  if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string')) {
    throw new OAuthError('invalid_request', 'scopes must be an array of strings');
  }
  const unknown = (scopes as string[]).filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new OAuthError('invalid_scope', `Unknown scope: ${unknown.join(', ')}`);
  const clientName = payload.client_name;
  if (typeof clientName !== 'string' || clientName.trim() === '' || clientName.length > 200) {
    throw new OAuthError(
      'invalid_request',
      'client_name must be a non-empty string of at most 200 characters',
    );
  }
  return { iss, jti, redirectUri, scopes: scopes as string[], clientName, exp };
}
