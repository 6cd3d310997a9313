import type { StoredCredential } from './credentials.js';
import type { TokenSet } from './oauth-token-endpoint.js';

type OAuthCredential = Extract<StoredCredential, { type: 'oauth' }>;

/**
 * What a connection stores of a token response: the access token, when it expires, and the
 * refresh token (the new one when the provider rotated it, else the one it still honours).
 */
export function oauthCredential(
  tokens: TokenSet,
  receivedAt: Date,
  previousRefreshToken: string | null,
): OAuthCredential & { expires_at: string | null } {
  return {
    type: 'oauth',
    access_token: tokens.access_token,
    expires_at:
      tokens.expires_in === null
        ? null
        : new Date(receivedAt.getTime() + tokens.expires_in * 1000).toISOString(),
    refresh_token: tokens.refresh_token ?? previousRefreshToken,
    token_type: tokens.token_type,
    scope: tokens.scope,
  };
}
