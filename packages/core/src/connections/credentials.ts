import type { Sealer } from '../store/sealing.js';
import { invalid } from './errors.js';

/**
 * A connection's own credential by profile: the managed pool needs none (calls go through the
 * metering proxy with the app's key), bring-your-own-key stores an API key, user OAuth stores
 * tokens. Stored sealed (AES-256-GCM) under the connection's id.
 *
 * @see docs/api/connections.md "Profiles"
 */
export const MANAGED_PROFILE = 'vendo_managed_pool';

export type StoredCredential =
  | { type: 'api_key'; api_key: string }
  | {
      type: 'oauth';
      access_token: string;
      expires_at: string | null;
      /** Kept by connector OAuth to renew the access token; never handed to a tool. */
      refresh_token?: string | null;
      token_type?: string;
      scope?: string | null;
    };

/** The profile of connections made through connector OAuth (`/api/oauth/*`). */
export const USER_OAUTH_PROFILE = 'user_oauth';

/** Where a signed-in user connects `provider` by OAuth (`connectionId`: reconnects that one). */
export function oauthStartPath(provider: string, connectionId?: string): string {
  const path = `/api/oauth/${encodeURIComponent(provider)}/start`;
  return connectionId === undefined ? path : `${path}?connectionId=${connectionId}`;
}

export const connectionCredentialAad = (connectionId: string) => `connection:${connectionId}`;

/**
 * Checks a credential given for a profile; returns what to store (null for the managed pool).
 * `oauthStart`, for a connector's connection, is the connector OAuth route a refusal names: such a
 * connection is meant to be made by a signed-in user's consent, a pasted token being the
 * exception (a token got elsewhere), so a caller without one is pointed there, not at a key.
 */
export function credentialForProfile(
  profile: string,
  given: unknown,
  oauthStart?: string,
): StoredCredential | null {
  if (profile === MANAGED_PROFILE) {
    if (given !== undefined && given !== null) throw invalid('The managed pool profile takes no credential');
    return null;
  }
  const value = (given ?? {}) as Record<string, unknown>;
  if (typeof value.api_key === 'string' && value.api_key.length > 0) {
    if (value.api_key.length > 4096) throw invalid('credential.api_key is too long');
    return { type: 'api_key', api_key: value.api_key };
  }
  if (typeof value.access_token === 'string' && value.access_token.length > 0) {
    if (value.access_token.length > 8192) throw invalid('credential.access_token is too long');
    const expires = value.expires_at;
    if (
      expires !== undefined &&
      expires !== null &&
      (typeof expires !== 'string' || Number.isNaN(Date.parse(expires)))
    ) {
      throw invalid('credential.expires_at must be an ISO 8601 date');
    }
    return {
      type: 'oauth',
      access_token: value.access_token,
      expires_at: (expires as string | undefined) ?? null,
    };
  }
  if (oauthStart !== undefined) {
    throw invalid(
      `Profile ${profile} is connected by OAuth: send a signed-in user to ${oauthStart}, or give a credential: { "access_token": "..." }`,
    );
  }
  throw invalid(`Profile ${profile} needs a credential: { "api_key": "..." } or { "access_token": "..." }`);
}

export function sealCredential(
  sealer: Sealer | null,
  connectionId: string,
  credential: StoredCredential,
): string {
  if (!sealer) throw invalid('Storing a credential needs SERVICE_STORE_ENCRYPTION_KEY on the platform');
  return sealer.seal(JSON.stringify(credential), connectionCredentialAad(connectionId));
}

export function openCredential(
  sealer: Sealer | null,
  connectionId: string,
  sealed: string,
): StoredCredential {
  if (!sealer)
    throw new Error('A connection credential is sealed but SERVICE_STORE_ENCRYPTION_KEY is not set');
  return JSON.parse(sealer.open(sealed, connectionCredentialAad(connectionId))) as StoredCredential;
}
