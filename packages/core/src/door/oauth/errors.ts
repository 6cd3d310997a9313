/**
 * OAuth errors that cross the wire: RFC 6749 §5.2 bodies `{ error, error_description }` from a
 * closed set of codes. Anything not an `OAuthError` is a fault and answers a generic 500.
 *
 * @see RFC 6749 §4.1.2.1, §5.2; RFC 7009 §2.2.1; RFC 7591 §3.2.2; RFC 8707 §2
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'invalid_token'
  | 'rate_limit_exceeded'
  | 'server_error';

export class OAuthError extends Error {
  override name = 'OAuthError';

  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
    readonly status = 400,
    /** Headers the answer carries (`Retry-After` on a 429). */
    readonly headers: Record<string, string> = {},
  ) {
    super(`${code}: ${description}`);
  }
}

/** Token and registration answers are never cached (RFC 6749 §5.1). */
export const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

export function oauthJson(body: unknown, status = 200, headers: HeadersInit = {}): Response {
  const merged = new Headers(headers);
  merged.set('content-type', 'application/json; charset=utf-8');
  for (const [name, value] of Object.entries(NO_STORE)) merged.set(name, value);
  return new Response(JSON.stringify(body), { status, headers: merged });
}

export function oauthErrorResponse(error: OAuthError, headers: Record<string, string> = {}): Response {
  return oauthJson({ error: error.code, error_description: error.description }, error.status, {
    ...error.headers,
    ...headers,
  });
}

/** A plain 404 for door paths that do not exist in the current mode. */
export function notFound(description = 'Not found'): Response {
  return new Response(JSON.stringify({ error: 'not_found', error_description: description }), {
    status: 404,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

/**
 * Redirects the user agent back to a validated redirect URI with the error (RFC 6749 §4.1.2.1).
 * `iss` rides along (RFC 9207) so a client can tell which server answered.
 */
export function redirectWithError(
  redirectUri: string,
  error: OAuthError,
  state: string | null,
  issuer: string,
  status: 302 | 303 = 302,
): Response {
  const target = new URL(redirectUri);
  target.searchParams.set('error', error.code);
  target.searchParams.set('error_description', error.description);
  if (state !== null) target.searchParams.set('state', state);
  target.searchParams.set('iss', issuer);
  return new Response(null, {
    status,
    headers: { location: target.toString(), 'cache-control': 'no-store' },
  });
}
