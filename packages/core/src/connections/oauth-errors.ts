/**
 * Refusals of connector OAuth, each with the HTTP status it maps to: 400 bad input or a state
 * that is unknown, used or expired; 401 a platform user's authorization ended without a session; 403 a state started by someone else; 404 an unknown provider
 * or connection; 409 an environment-configured client changed through the API; 429 a user with
 * too many authorizations in flight; 502 the
 * provider's token endpoint failed or refused the exchange.
 */
export type ConnectorOAuthCode =
  | 'INVALID_REQUEST'
  | 'NOT_A_CONNECTOR'
  | 'OAUTH_NOT_CONFIGURED'
  | 'INVALID_STATE'
  | 'STATE_MISMATCH'
  | 'NOT_FOUND'
  | 'FORBIDDEN'
  | 'PROVIDER_ERROR'
  | 'OAUTH_EXCHANGE_FAILED'
  | 'CONFIGURED_BY_ENVIRONMENT'
  | 'TOO_MANY_AUTHORIZATIONS'
  | 'INVALID_CALLBACK'
  | 'UNAUTHORIZED';

export class ConnectorOAuthError extends Error {
  override name = 'ConnectorOAuthError';
  /** Where the user meant to go back to, once the authorization it refuses is known. */
  returnTo: string | null = null;
  /** The host-polled flow of a host app's user it refuses, once known. */
  flowId: string | null = null;
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 429 | 502,
    readonly code: ConnectorOAuthCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
