import { randomUUID } from 'node:crypto';
import { type MutableRedirectUri, type MutableToken, OAuth2Server } from 'oauth2-mock-server';

/** A local OAuth 2 provider, and a switch that makes its authorize step refuse. */
export interface OAuthProvider {
  server: OAuth2Server;
  url: string;
  /** The `error` the next authorizations send back instead of a code; null for none. */
  refuseWith(error: string | null): void;
  stop(): Promise<void>;
}

/**
 * Starts a local OAuth 2 provider (authorize, token, revoke) on loopback, for the connector OAuth
 * suites: its tokens are unique even when minted in the same second, and its authorize step can
 * be made to refuse.
 */
export async function startOAuthProvider(): Promise<OAuthProvider> {
  const server = new OAuth2Server();
  await server.issuer.keys.generate('RS256');
  await server.start(0, '127.0.0.1');
  let refusal: string | null = null;
  // Tokens minted in the same second would otherwise be identical.
  server.service.on('beforeTokenSigning', (token: MutableToken) => {
    token.payload.jti = randomUUID();
  });
  server.service.on('beforeAuthorizeRedirect', ({ url }: MutableRedirectUri) => {
    if (refusal) {
      url.searchParams.delete('code');
      url.searchParams.set('error', refusal);
    }
  });
  return {
    server,
    url: server.issuer.url!,
    refuseWith: (error) => {
      refusal = error;
    },
    stop: () => server.stop(),
  };
}
