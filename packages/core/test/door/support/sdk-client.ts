/**
 * The real MCP SDK client (`Client`, `StreamableHTTPClientTransport` and its OAuth flow) as a client
 * of one protocol revision, against a door host, with every HTTP exchange recorded so suites can
 * assert what went over the wire.
 *
 * The SDK's `Client` always asks `initialize` for its newest revision; a client of another revision
 * asks for its own, so the transport here rewrites that one field. A client of a revision before
 * RFC 9728 (2025-03-26) knows no protected-resource metadata: `withoutResourceMetadata` hides those
 * documents from it, so it discovers the authorization server the way that revision did.
 */
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, isInitializeRequest, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { MemoryOAuthProvider } from '../../support/mcp-oauth-client.js';
import type { DoorHost } from './door-host.js';
import { openConsent, postConsent, signIn } from './oauth-flow.js';

/** One HTTP exchange the client made. */
export interface Exchange {
  method: string;
  url: URL;
  headers: Headers;
  /** The request body when it was text or a form (OAuth and JSON-RPC requests). */
  body: string | null;
  status: number;
  /** The answer of a discovery GET, parsed. */
  json?: Record<string, unknown>;
}

export interface SdkClientOptions {
  /** The revision `initialize` asks for (default: the SDK's newest). */
  protocolVersion?: string;
  /** A client that predates RFC 9728: protected-resource metadata answers it 404. */
  withoutResourceMetadata?: boolean;
}

/** A fetch that records each exchange (and, for an older client, hides RFC 9728 documents). */
export function recordingFetch(exchanges: Exchange[], options: SdkClientOptions = {}): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = init?.method ?? 'GET';
    const headers = new Headers(init?.headers);
    const body =
      typeof init?.body === 'string' || init?.body instanceof URLSearchParams ? String(init.body) : null;
    const hidden = options.withoutResourceMetadata && url.pathname.includes('/oauth-protected-resource');
    const response = hidden ? new Response('not found', { status: 404 }) : await fetch(input, init);
    const exchange: Exchange = { method, url, headers, body, status: response.status };
    if (method === 'GET' && url.pathname.includes('/.well-known/') && response.ok) {
      exchange.json = await response.clone().json();
    }
    exchanges.push(exchange);
    return response;
  };
}

/** Signs `subject` in, opens the consent page of `authorizationUrl` and approves: the code. */
export async function approve(host: DoorHost, authorizationUrl: URL, subject: string): Promise<string> {
  const cookie = signIn(host, subject);
  const consent = await openConsent(authorizationUrl.toString(), cookie);
  if (consent.response.status !== 200) throw new Error(`consent answered ${consent.response.status}`);
  const approved = await postConsent(host, cookie, {
    transaction: consent.transaction,
    csrf_token: consent.csrfToken,
    decision: 'approve',
  });
  const code = new URL(approved.headers.get('location') ?? '').searchParams.get('code');
  if (!code) throw new Error(`no code in ${approved.headers.get('location')}`);
  return code;
}

export interface SdkClient {
  mcpUrl: URL;
  provider: MemoryOAuthProvider;
  exchanges: Exchange[];
  /** A transport of this client (a new one per connection), asking for its revision. */
  transport(): StreamableHTTPClientTransport;
  /**
   * Connects, signing in when the door asks: the first attempt's 401 starts discovery and
   * registration, `authorize` (default: approve as `subject`) answers the code, and the client
   * connects with the tokens. Answers the connected client and its transport.
   */
  signIn(
    subject: string,
    authorize?: (authorizationUrl: URL) => Promise<string>,
  ): Promise<{ client: Client; transport: StreamableHTTPClientTransport }>;
}

export function sdkClient(host: DoorHost, options: SdkClientOptions = {}): SdkClient {
  const mcpUrl = new URL(`${host.url}/api/service/mcp`);
  const exchanges: Exchange[] = [];
  const fetchFn = recordingFetch(exchanges, options);
  const provider = new MemoryOAuthProvider(`${host.url}/callback`, 'Conformance client');
  const transport = () => {
    const made = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: fetchFn });
    const { protocolVersion } = options;
    if (protocolVersion) {
      const send = made.send.bind(made);
      made.send = (message, sendOptions) =>
        send(
          isInitializeRequest(message)
            ? { ...message, params: { ...message.params, protocolVersion } }
            : message,
          sendOptions,
        );
    }
    return made;
  };
  return {
    mcpUrl,
    provider,
    exchanges,
    transport,
    async signIn(subject, authorize = (url) => approve(host, url, subject)) {
      const first = new Client({ name: 'conformance', version: '1.0.0' });
      const refused = await first.connect(transport()).then(
        () => null,
        (error: unknown) => error,
      );
      if (!(refused instanceof UnauthorizedError)) throw new Error(`expected a sign-in, got ${refused}`);
      const code = await authorize(provider.authorizationUrl!);
      const connected = transport();
      await connected.finishAuth(code);
      const client = new Client({ name: 'conformance', version: '1.0.0' });
      await client.connect(connected);
      return { client, transport: connected };
    },
  };
}

/** What one whole lifecycle of the SDK client showed. */
export interface Lifecycle {
  /** The revision the door answered `initialize` with. */
  negotiated: string | undefined;
  sessionId: string | undefined;
  tools: Tool[];
  /** `list_notes` called right after connecting. */
  listed: CallToolResult;
  /** `create_note` called an hour later: the SDK refreshed the expired token first. */
  afterRefresh: CallToolResult;
  /** What the next call threw once the refresh token was revoked. */
  afterRevoke: unknown;
  /** The refresh token before and after the refresh. */
  refreshTokens: [string | undefined, string | undefined];
}

/**
 * The whole life of a connection: discovery from the first 401, registration, authorization with
 * PKCE, tools/list, tools/call, a refresh an hour later, revocation at the advertised endpoint,
 * and the refusal after it.
 */
export async function runLifecycle(host: DoorHost, sdk: SdkClient, subject: string): Promise<Lifecycle> {
  const { client, transport } = await sdk.signIn(subject);
  const negotiated = transport.protocolVersion;
  const sessionId = transport.sessionId;
  const { tools } = await client.listTools();
  const listed = (await client.callTool({ name: 'list_notes', arguments: {} })) as CallToolResult;
  const refreshedFrom = sdk.provider.saved?.refresh_token;
  host.clock.advance(61 * 60 * 1000);
  const afterRefresh = (await client.callTool({
    name: 'create_note',
    arguments: { text: 'after refresh' },
  })) as CallToolResult;
  const refreshedTo = sdk.provider.saved?.refresh_token;
  const metadata = sdk.exchanges.find((e) => e.json?.revocation_endpoint)?.json;
  const revoked = await fetch(String(metadata?.revocation_endpoint), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      token: sdk.provider.saved!.refresh_token!,
      client_id: sdk.provider.information!.client_id,
    }),
  });
  if (revoked.status !== 200) throw new Error(`revoke answered ${revoked.status}`);
  const afterRevoke = await client.callTool({ name: 'list_notes', arguments: {} }).then(
    () => null,
    (error: unknown) => error,
  );
  await client.close().catch(() => {});
  return {
    negotiated,
    sessionId,
    tools,
    listed,
    afterRefresh,
    afterRevoke,
    refreshTokens: [refreshedFrom, refreshedTo],
  };
}
