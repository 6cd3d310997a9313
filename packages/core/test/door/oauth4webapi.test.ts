/**
 * A strict third-party OAuth client (`oauth4webapi`) drives the door: RFC 9728 and RFC 8414
 * discovery (issuer and resource checked), registration, the code flow with PKCE and `iss`
 * validation, refresh, revocation, the service-key exchange, and the error cases.
 */
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStore, type TestStore } from '../support/stores.js';
import { type DoorHost, startDoorHost } from './support/door-host.js';
import { openConsent, postConsent, rpc, signIn } from './support/oauth-flow.js';

const SERVICE_KEY = `mcp_svc_${'s'.repeat(43)}`;
const insecure = { [oauth.allowInsecureRequests]: true } as const;

let store: TestStore;
let host: DoorHost;
let as: oauth.AuthorizationServer;
let client: oauth.Client;
let redirectUri: string;

beforeAll(async () => {
  store = await openTestStore();
  host = await startDoorHost(store, { mcp: { serviceAuth: { keys: [SERVICE_KEY] } } });
  redirectUri = `${host.url}/callback`;
});
afterAll(async () => {
  await host?.close();
  await store?.dispose();
});

/** Consent as a signed-in user; answers the callback URL the browser lands on. */
async function consent(authorizationUrl: URL, decision: 'approve' | 'deny' = 'approve'): Promise<URL> {
  const cookie = signIn(host, 'o4w-user');
  const ticket = await openConsent(authorizationUrl.toString(), cookie);
  const answer = await postConsent(host, cookie, {
    transaction: ticket.transaction,
    csrf_token: ticket.csrfToken,
    decision,
  });
  return new URL(answer.headers.get('location')!);
}

function authorizationUrl(challenge: string, state: string, extra: Record<string, string> = {}): URL {
  const url = new URL(as.authorization_endpoint!);
  url.searchParams.set('client_id', client.client_id);
  url.searchParams.set('redirect_uri', redirectUri);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', 'read write');
  url.searchParams.set('code_challenge', challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', state);
  url.searchParams.set('resource', `${host.url}/api/service/mcp`);
  for (const [name, value] of Object.entries(extra)) url.searchParams.set(name, value);
  return url;
}

async function codeFlow(): Promise<{ params: URLSearchParams; verifier: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const callback = await consent(authorizationUrl(await oauth.calculatePKCECodeChallenge(verifier), state));
  return { params: oauth.validateAuthResponse(as, client, callback, state), verifier };
}

/** Exchanges a code as the registered client; rejects with the library's error on an error answer. */
async function redeem(params: URLSearchParams, verifier: string): Promise<oauth.TokenEndpointResponse> {
  return oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      redirectUri,
      verifier,
      insecure,
    ),
  );
}

/** What a promise rejected with (or resolved to): the library's error objects, to assert on. */
const outcome = (promise: Promise<unknown>): Promise<unknown> => promise.catch((error: unknown) => error);

/** The error `validateAuthResponse` throws for a callback URL (or its answer, when none). */
function authResponseError(callback: URL, state: string): unknown {
  try {
    return oauth.validateAuthResponse(as, client, callback, state);
  } catch (error) {
    return error;
  }
}

/** `tools/list` on the MCP endpoint through the library's protected-resource request. */
function listTools(accessToken: string, id: number): Promise<Response> {
  return oauth.protectedResourceRequest(
    accessToken,
    'POST',
    new URL(`${host.url}/api/service/mcp`),
    new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' }),
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list' }),
    insecure,
  );
}

describe('oauth4webapi against the door', () => {
  it('discovers the resource and the authorization server, with issuer and resource checked', async () => {
    const resource = new URL(`${host.url}/api/service/mcp`);
    const prm = await oauth.processResourceDiscoveryResponse(
      resource,
      await oauth.resourceDiscoveryRequest(resource, insecure),
    );
    expect(prm.authorization_servers).toEqual([resource.toString()]);
    const issuer = new URL(prm.authorization_servers![0]!);
    as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
    );
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    expect(as.revocation_endpoint).toBe(`${resource}/revoke`);
  });

  it('registers a public client', async () => {
    const response = await oauth.dynamicClientRegistrationRequest(
      as,
      { redirect_uris: [redirectUri], client_name: 'oauth4webapi', token_endpoint_auth_method: 'none' },
      insecure,
    );
    client = await oauth.processDynamicClientRegistrationResponse(response);
    expect(client.client_id).toMatch(/^mcp_client_/);
  });

  it('runs the code flow with PKCE and iss, refreshes with rotation, and revokes', async () => {
    const { params, verifier } = await codeFlow();
    const tokens = await redeem(params, verifier);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect((await listTools(tokens.access_token, 1)).status).toBe(200);

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    );
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure),
    );
    const refused = await outcome(listTools(refreshed.access_token, 2));
    expect(refused).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    const challenge = (refused as oauth.WWWAuthenticateChallengeError).cause[0]!;
    expect(challenge.scheme).toBe('bearer');
    expect(challenge.parameters.error).toBe('invalid_token');
    expect(challenge.parameters.resource_metadata).toBe(
      `${host.url}/.well-known/oauth-protected-resource/api/service/mcp`,
    );
  });

  it('sees invalid_grant for a replayed code and for a wrong then right verifier', async () => {
    const first = await codeFlow();
    await redeem(first.params, first.verifier);
    const replay = await outcome(redeem(first.params, first.verifier));
    expect(replay).toBeInstanceOf(oauth.ResponseBodyError);
    expect((replay as oauth.ResponseBodyError).error).toBe('invalid_grant');
    expect((replay as oauth.ResponseBodyError).error_description).toBe(
      'Authorization code is invalid or expired',
    );

    const second = await codeFlow();
    const wrong = await outcome(redeem(second.params, oauth.generateRandomCodeVerifier()));
    expect((wrong as oauth.ResponseBodyError).error_description).toBe('PKCE verification failed');
    const right = await outcome(redeem(second.params, second.verifier));
    expect((right as oauth.ResponseBodyError).error).toBe('invalid_grant');
  });

  it('sees a denial and a PKCE violation as authorization-response errors carrying the state', async () => {
    const state = oauth.generateRandomState();
    const verifier = oauth.generateRandomCodeVerifier();
    const denied = await consent(
      authorizationUrl(await oauth.calculatePKCECodeChallenge(verifier), state),
      'deny',
    );
    const deniedError = authResponseError(denied, state);
    expect(deniedError).toBeInstanceOf(oauth.AuthorizationResponseError);
    expect((deniedError as oauth.AuthorizationResponseError).error).toBe('access_denied');

    const plain = await fetch(authorizationUrl(verifier, state, { code_challenge_method: 'plain' }), {
      headers: { cookie: signIn(host, 'o4w-user') },
      redirect: 'manual',
    });
    const pkceError = authResponseError(new URL(plain.headers.get('location')!), state);
    expect((pkceError as oauth.AuthorizationResponseError).error).toBe('invalid_request');
    expect((pkceError as oauth.AuthorizationResponseError).error_description).toBe(
      'PKCE with S256 is required',
    );
  });

  it('refuses a refresh token presented by another client', async () => {
    const { params, verifier } = await codeFlow();
    const tokens = await redeem(params, verifier);
    const other = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [redirectUri] }, insecure),
    );
    const stolen = await outcome(
      oauth.processRefreshTokenResponse(
        as,
        other,
        await oauth.refreshTokenGrantRequest(as, other, oauth.None(), tokens.refresh_token!, insecure),
      ),
    );
    expect((stolen as oauth.ResponseBodyError).error).toBe('invalid_grant');
    const revokeOther = await outcome(
      oauth.processRevocationResponse(
        await oauth.revocationRequest(as, other, oauth.None(), tokens.refresh_token!, insecure),
      ),
    );
    expect((revokeOther as oauth.ResponseBodyError).error).toBe('unauthorized_client');
  });

  it('exchanges a service key for a ten-minute token through the generic token endpoint request', async () => {
    host.users.set('backend-user', { subject: 'backend-user' });
    const service: oauth.Client = { client_id: 'service' };
    const response = await oauth.genericTokenEndpointRequest(
      as,
      service,
      oauth.ClientSecretPost(SERVICE_KEY),
      'urn:ietf:params:oauth:grant-type:token-exchange',
      { subject_token: 'backend-user', subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' },
      insecure,
    );
    const tokens = await oauth.processGenericTokenEndpointResponse(as, service, response);
    expect(tokens.expires_in).toBe(600);
    expect(tokens.refresh_token).toBeUndefined();
    expect((await rpc(host, tokens.access_token, 'tools/list')).status).toBe(200);

    const wrong = await outcome(
      oauth.processGenericTokenEndpointResponse(
        as,
        service,
        await oauth.genericTokenEndpointRequest(
          as,
          service,
          oauth.ClientSecretPost(`mcp_svc_${'w'.repeat(43)}`),
          'urn:ietf:params:oauth:grant-type:token-exchange',
          { subject_token: 'backend-user' },
          insecure,
        ),
      ),
    );
    expect((wrong as oauth.ResponseBodyError).error).toBe('invalid_client');
  });
});
