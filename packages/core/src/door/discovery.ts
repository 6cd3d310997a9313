/**
 * Discovery: RFC 9728 protected-resource metadata, RFC 8414 authorization-server metadata and the
 * MCP server card. Seven exact paths (never prefixes): five at the origin root, answered by
 * `wellKnown()`, and the two OAuth documents under the MCP path, answered by `handle()`. Every
 * URL in them comes from the configured base URL, never from the request.
 *
 * @see RFC 9728 §3, RFC 8414 §3
 */
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { SCOPES } from './config.js';
import type { DoorContext } from './context.js';
import { preflight, withCors } from './cors.js';
import { notFound } from './oauth/errors.js';
import { RESOURCE_SCOPES } from './scopes.js';

/** Grant type of the RFC 8693 service-key exchange. */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** MCP protocol revision the server card names: the newest the transport offers. */
export const SERVER_CARD_PROTOCOL_VERSION = LATEST_PROTOCOL_VERSION;

const JSON_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'public, max-age=300',
};

export function protectedResourceMetadata(context: DoorContext): Record<string, unknown> {
  const { urls, remoteAs, productName } = context.config;
  return {
    resource: urls.resource,
    authorization_servers: [remoteAs ? remoteAs.issuer : urls.issuer],
    scopes_supported: [...RESOURCE_SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: productName,
    resource_documentation: urls.connect,
  };
}

export function authorizationServerMetadata(context: DoorContext): Record<string, unknown> {
  const { urls, serviceAuth } = context.config;
  return {
    issuer: urls.issuer,
    authorization_endpoint: urls.authorize,
    token_endpoint: urls.token,
    registration_endpoint: urls.register,
    revocation_endpoint: urls.revoke,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [
      'authorization_code',
      'refresh_token',
      ...(serviceAuth ? [TOKEN_EXCHANGE_GRANT] : []),
    ],
    // Service keys authenticate in the form or by HTTP Basic; user clients are public.
    token_endpoint_auth_methods_supported: serviceAuth
      ? ['none', 'client_secret_post', 'client_secret_basic']
      : ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
    scopes_supported: [...SCOPES],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
    service_documentation: urls.connect,
  };
}

/** The MCP server card: what `/connect` shows and what registries and doctor read. */
export interface ServerCard {
  version: string;
  protocolVersion: string;
  serverInfo: { name: string; title: string; version: string };
  transport: { type: 'streamable-http'; endpoint: string };
  capabilities: { tools: Record<string, never> };
  authentication: { required: true; schemes: ['oauth2']; protectedResourceMetadata: string };
  documentation: string;
}

export function serverCard(context: DoorContext): ServerCard {
  const { urls, productName } = context.config;
  return {
    version: '1.0',
    protocolVersion: SERVER_CARD_PROTOCOL_VERSION,
    serverInfo: { name: productName, title: productName, version: '1.0.0' },
    transport: { type: 'streamable-http', endpoint: urls.resource },
    capabilities: { tools: {} },
    authentication: {
      required: true,
      schemes: ['oauth2'],
      protectedResourceMetadata: urls.protectedResourceMetadata,
    },
    documentation: urls.connect,
  };
}

type MetadataDocument = 'protected-resource' | 'authorization-server' | 'server-card';

/** Which document an origin-root path names, or null: only the exact paths match. */
export function wellKnownDocument(context: DoorContext, pathname: string): MetadataDocument | null {
  const paths = context.config.urls.wellKnownPaths;
  if (pathname === paths.protectedResource) return 'protected-resource';
  if (pathname === paths.authorizationServer) return 'authorization-server';
  // MCP 2025-03-26 clients look for the metadata at the bare origin. With tokens from another
  // server the door has none to give there, so the host's own document (if any) answers.
  if (pathname === paths.authorizationServerAtOrigin && !context.config.remoteAs)
    return 'authorization-server';
  if (pathname === paths.serverCard || pathname === paths.serverCardAlias) return 'server-card';
  return null;
}

/** Answers one discovery document (GET/HEAD, OPTIONS for browsers); 404 where the mode has none. */
export function metadataResponse(
  context: DoorContext,
  document: MetadataDocument,
  request: Request,
): Response {
  if (request.method === 'OPTIONS') return preflight('GET, OPTIONS');
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    return withCors(new Response(null, { status: 405, headers: { allow: 'GET, HEAD, OPTIONS' } }));
  }
  let body: object;
  switch (document) {
    case 'protected-resource':
      body = protectedResourceMetadata(context);
      break;
    case 'authorization-server':
      // In remoteAs and broker mode another server issues the tokens; ours does not exist.
      if (context.config.remoteAs) return withCors(notFound());
      body = authorizationServerMetadata(context);
      break;
    case 'server-card':
      body = serverCard(context);
      break;
  }
  return withCors(
    new Response(request.method === 'HEAD' ? null : JSON.stringify(body), {
      status: 200,
      headers: JSON_HEADERS,
    }),
  );
}
