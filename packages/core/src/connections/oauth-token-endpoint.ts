import { readBody } from '../http/body.js';
import type { TokenAuthMethod } from '../store/database.js';

/**
 * The platform as an OAuth client of a provider's token endpoint (RFC 6749 §4.1.3 code exchange,
 * §6 refresh) and its revocation endpoint (RFC 7009). Every call has a timeout and reads at most
 * `MAX_RESPONSE_BYTES` of the answer, so a slow or hostile provider costs a bounded wait.
 *
 * A provider's refusal (a 4xx with an RFC 6749 §5.2 `error`) is `rejected`; anything else that
 * goes wrong (timeout, network, 5xx, an answer that is not a token response) is `unavailable`.
 * Neither carries a token, a code or a secret in its message.
 */
export const TOKEN_TIMEOUT_MS = 10_000;
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface TokenClient {
  tokenUrl: string;
  revocationUrl: string | null;
  clientId: string;
  clientSecret: string | null;
  authMethod: TokenAuthMethod;
}

/** A successful token response, as the provider sent it. */
export interface TokenSet {
  access_token: string;
  token_type: string;
  refresh_token: string | null;
  /** Seconds; null when the provider does not say. */
  expires_in: number | null;
  scope: string | null;
}

export class TokenEndpointError extends Error {
  override name = 'TokenEndpointError';
  constructor(
    readonly kind: 'rejected' | 'unavailable',
    /** The provider's RFC 6749 error code when it gave one (`invalid_grant`, ...). */
    readonly oauthError: string | null,
    message: string,
  ) {
    super(message);
  }
}

export async function requestTokens(
  client: TokenClient,
  grant: Record<string, string>,
  fetchImpl: typeof fetch,
): Promise<TokenSet> {
  const response = await post(client, client.tokenUrl, grant, fetchImpl);
  const body = await readJson(response);
  if (!response.ok) {
    const error = typeof body?.error === 'string' ? body.error.slice(0, 100) : null;
    const kind = response.status >= 400 && response.status < 500 && error ? 'rejected' : 'unavailable';
    throw new TokenEndpointError(
      kind,
      error,
      `The token endpoint answered ${response.status}${error ? ` (${error})` : ''}`,
    );
  }
  if (!body || typeof body.access_token !== 'string' || body.access_token.length === 0) {
    throw new TokenEndpointError('unavailable', null, 'The token endpoint answered without an access token');
  }
  const expiresIn = Number(body.expires_in);
  return {
    access_token: body.access_token,
    token_type: typeof body.token_type === 'string' ? body.token_type : 'Bearer',
    refresh_token:
      typeof body.refresh_token === 'string' && body.refresh_token.length > 0 ? body.refresh_token : null,
    expires_in:
      body.expires_in !== undefined && Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : null,
    scope: typeof body.scope === 'string' ? body.scope : null,
  };
}

/** RFC 7009 revocation; true when the provider acknowledged it (200). */
export async function revokeToken(
  client: TokenClient,
  token: string,
  hint: 'refresh_token' | 'access_token',
  fetchImpl: typeof fetch,
): Promise<boolean> {
  if (!client.revocationUrl) return false;
  const response = await post(client, client.revocationUrl, { token, token_type_hint: hint }, fetchImpl);
  await response.body?.cancel().catch(() => {});
  return response.ok;
}

async function post(
  client: TokenClient,
  url: string,
  fields: Record<string, string>,
  fetchImpl: typeof fetch,
): Promise<Response> {
  const form = new URLSearchParams(fields);
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  if (client.authMethod === 'client_secret_basic' && client.clientSecret !== null) {
    // RFC 6749 §2.3.1: both parts form-encoded before joining.
    const pair = `${formEncode(client.clientId)}:${formEncode(client.clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;
  } else {
    form.set('client_id', client.clientId);
    if (client.authMethod === 'client_secret_post' && client.clientSecret !== null) {
      form.set('client_secret', client.clientSecret);
    }
  }
  try {
    return await fetchImpl(url, {
      method: 'POST',
      headers,
      body: form.toString(),
      redirect: 'error',
      signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
    });
  } catch (error) {
    const timedOut = error instanceof DOMException && error.name === 'TimeoutError';
    throw new TokenEndpointError(
      'unavailable',
      null,
      timedOut ? 'The token endpoint did not answer in time' : 'The token endpoint could not be reached',
    );
  }
}

async function readJson(response: Response): Promise<Record<string, unknown> | null> {
  let text: string;
  try {
    const bytes = await readBody(response, {
      maxBytes: MAX_RESPONSE_BYTES,
      tooLarge: () => new TokenEndpointError('unavailable', null, 'The token endpoint answered too much'),
    });
    text = new TextDecoder().decode(bytes);
  } catch (error) {
    if (error instanceof TokenEndpointError) throw error;
    throw new TokenEndpointError('unavailable', null, 'The token endpoint answer broke off');
  }
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+');
}
