/**
 * The MCP endpoint: Streamable HTTP from `@modelcontextprotocol/sdk`, behind bearer
 * authentication. Every request is authenticated and its principal re-resolved; a null principal
 * revokes the user's grants and ends their sessions (the account-level kill switch).
 *
 * Each request gets its own SDK server and transport (the SDK's stateless mode), so any instance
 * can serve any request; the door keeps sessions itself, in the store, bound to one subject and
 * one client.
 *
 * Before any of that, a page's `Origin` must be one the door trusts (DNS rebinding). After it, the
 * transport rules the SDK leaves open: one message per request (no batches), an
 * `MCP-Protocol-Version` the SDK speaks, params its methods take (-32602, see `params.ts`), and a
 * `tools/call` whose scopes the token lacks answered as a 403 step-up challenge rather than a tool
 * result.
 *
 * @see MCP 2025-11-25 "Transports" §Security Warning, §Protocol Version Header; RFC 6750 §3
 */
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  isJSONRPCRequest,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  McpError,
  RequestIdSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../agent/tools.js';
import { parseJsonInput } from '../../http/input-guard.js';
import { TtlCache } from '../../internal/ttl-cache.js';
import type { DoorContext } from '../context.js';
import { preflight, withCors } from '../cors.js';
import { OAuthError } from '../oauth/errors.js';
import { readCapped } from '../oauth/form.js';
import type { McpSession } from '../storage/sessions.js';
import { callTool, insufficientScope } from '../tool-call.js';
import type { DoorMenu } from '../tool-menu.js';
import { type BearerAuthenticator, bearerChallenge, bearerOf, type DoorCaller } from './bearer.js';
import { invalidParams } from './params.js';

/** Largest JSON-RPC body the door reads (the SDK's own default). */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** A session binding is trusted this long without asking the store; ending one here clears it. */
const SESSION_CACHE_MS = 2000;
/** Progress notifications keep a long tool call alive: clients give up after about 60 s of silence. */
export const PROGRESS_EVERY_MS = 15_000;
const SERVER_VERSION = '1.0.0';
/** JSON-RPC's implementation-defined server error: what the SDK answers its own transport refusals with. */
const TRANSPORT_REFUSED = -32000;

export interface TransportHandler {
  handle(request: Request): Promise<Response>;
  clearCaches(): void;
}

export function createTransportHandler(
  context: DoorContext,
  menu: DoorMenu,
  bearer: BearerAuthenticator,
  progressEveryMs = PROGRESS_EVERY_MS,
): TransportHandler {
  const sessionCache = new TtlCache<string, McpSession>({
    ttlMs: SESSION_CACHE_MS,
    maxEntries: 10_000,
    now: context.now,
  });

  const sessionOf = async (id: string): Promise<McpSession | null> => {
    const hit = sessionCache.get(id);
    if (hit) return hit;
    const binding = await context.sessions.get(id);
    if (binding) sessionCache.set(id, binding);
    else sessionCache.delete(id);
    return binding;
  };

  const handle = async (request: Request): Promise<Response> => {
    // A page from another site (or a rebound DNS name) is refused before anything else, its
    // preflight included; native clients send no Origin at all.
    const origin = request.headers.get('origin');
    if (origin !== null && !context.config.allowedOrigins.includes(origin)) {
      return jsonRpcError(
        403,
        TRANSPORT_REFUSED,
        'Forbidden: pages from this origin may not call this MCP server',
      );
    }
    if (request.method === 'OPTIONS') return preflight('POST, DELETE, OPTIONS');
    const token = bearerOf(request);
    if (!token) return bearerChallenge(context, null);
    const caller = await bearer.authenticate(token);
    if (!caller) {
      return bearerChallenge(context, {
        code: 'invalid_token',
        description: 'The access token is invalid, expired or revoked',
      });
    }
    const principal = await context.oauth.principal(caller.subject);
    if (!principal) {
      if (!context.config.remoteAs) await context.grants.revokeSubject(caller.subject);
      await context.sessions.endSubject(caller.subject);
      bearer.clear();
      sessionCache.clear();
      context.logger.info('door.principal_gone', { client_id: caller.clientId });
      return bearerChallenge(context, {
        code: 'invalid_token',
        description: 'The user of this token is unknown',
      });
    }

    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId !== null) {
      const binding = await sessionOf(sessionId);
      // Another user's or another client's session is as unknown as an ended one.
      if (!binding || binding.subject !== caller.subject || binding.clientId !== caller.clientId) {
        return jsonRpcError(404, ErrorCode.ConnectionClosed, 'Session not found');
      }
    }
    switch (request.method) {
      case 'POST':
        return withCors(await post(request, caller, principal, sessionId));
      case 'DELETE': {
        if (sessionId === null)
          return jsonRpcError(400, ErrorCode.InvalidRequest, 'Mcp-Session-Id header is required');
        const badVersion = unsupportedVersion(request);
        if (badVersion) return badVersion;
        await context.sessions.end(sessionId);
        sessionCache.delete(sessionId);
        return withCors(new Response(null, { status: 200 }));
      }
      default:
        // No server-initiated stream: every answer rides on the POST that asked for it.
        return withCors(new Response(null, { status: 405, headers: { allow: 'POST, DELETE, OPTIONS' } }));
    }
  };

  /** A `tools/call` of a listed tool the token's scopes do not cover; unknown tools go on to -32602. */
  const scopeRefusal = (body: unknown, caller: DoorCaller) => {
    if (!isJSONRPCRequest(body) || body.method !== 'tools/call') return null;
    const name = body.params?.name;
    const tool = typeof name === 'string' ? menu.get(name) : undefined;
    return tool ? insufficientScope(context, tool, caller) : null;
  };

  const post = async (
    request: Request,
    caller: DoorCaller,
    principal: Principal,
    sessionId: string | null,
  ): Promise<Response> => {
    let text: string;
    try {
      text = await readCapped(request, MAX_MESSAGE_BYTES);
    } catch (error) {
      if (error instanceof OAuthError && error.status === 413) {
        return jsonRpcError(413, ErrorCode.InvalidRequest, 'Message too large');
      }
      return jsonRpcError(400, ErrorCode.ParseError, 'Parse error: the body must be JSON-RPC');
    }
    // The shared input guard: nesting capped before parsing, every string clean text. JSON that
    // breaks it is a JSON-RPC Invalid Request, answered 400 with no id (Streamable HTTP).
    const input = text.trim() === '' ? null : parseJsonInput(text);
    if (input === null || (!input.ok && input.reason === 'syntax')) {
      return jsonRpcError(400, ErrorCode.ParseError, 'Parse error: the body must be JSON-RPC');
    }
    if (!input.ok) return jsonRpcError(400, ErrorCode.InvalidRequest, `Invalid Request: ${input.message}`);
    const body = input.value;
    // MCP 2025-06-18 removed batching, and no SDK client sends one: every revision gets the same
    // answer, since a batch says nothing of the revision its sender speaks.
    if (Array.isArray(body)) {
      return jsonRpcError(
        400,
        ErrorCode.InvalidRequest,
        'Invalid Request: JSON-RPC batches are not supported',
      );
    }
    // JSON that is no JSON-RPC message (`{}`, `5`, a `jsonrpc` other than "2.0", a fractional id)
    // is an Invalid Request (JSON-RPC 2.0 §5.1): the SDK would answer it as a parse error.
    if (!JSONRPCMessageSchema.safeParse(body).success) {
      const id = (body as { id?: unknown } | null)?.id;
      return jsonRpcError(
        400,
        ErrorCode.InvalidRequest,
        'Invalid Request: not a JSON-RPC 2.0 request, notification or response',
        RequestIdSchema.safeParse(id).success ? (id as string | number) : null,
      );
    }
    const rpcRequest = isJSONRPCRequest(body) ? body : null;
    const initializing = rpcRequest?.method === 'initialize';
    // initialize negotiates in its body (a version the SDK speaks, else the newest it speaks);
    // every later request names the negotiated version in the header.
    const badVersion = initializing ? null : unsupportedVersion(request);
    if (badVersion) return badVersion;
    // An error answering a request rides in a 200, as the SDK sends its own.
    const invalid = rpcRequest && invalidParams(rpcRequest);
    if (invalid) return jsonRpcError(200, ErrorCode.InvalidParams, invalid, rpcRequest.id);
    const refusal = scopeRefusal(body, caller);
    if (refusal) return bearerChallenge(context, refusal);
    const server = createServer(context, menu, caller, principal, progressEveryMs);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    const response = await transport.handleRequest(request, { parsedBody: body });
    if (!initializing || sessionId !== null || response.status !== 200) return response;
    const id = await context.sessions.open({ subject: caller.subject, clientId: caller.clientId });
    const headers = new Headers(response.headers);
    headers.set('mcp-session-id', id);
    return new Response(response.body, { status: response.status, headers });
  };

  return {
    handle,
    clearCaches: () => {
      sessionCache.clear();
      bearer.clear();
    },
  };
}

function createServer(
  context: DoorContext,
  menu: DoorMenu,
  caller: DoorCaller,
  principal: Principal,
  progressEveryMs: number,
): Server {
  const server = new Server(
    { name: context.config.productName, version: SERVER_VERSION },
    { capabilities: { tools: { listChanged: false } } },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: menu.listed }));
  // Params reach a handler already checked (see `invalidParams`), so its schema never refuses.
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = menu.get(request.params.name);
    // Unknown and off-menu tools answer alike: the menu does not reveal what it hides.
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    const progressToken = request.params._meta?.progressToken;
    let beats = 0;
    const keepAlive =
      progressToken === undefined
        ? undefined
        : setInterval(() => {
            beats++;
            extra
              .sendNotification({
                method: 'notifications/progress',
                params: { progressToken, progress: beats },
              })
              .catch(() => {});
          }, progressEveryMs);
    try {
      return await callTool(context, {
        tool,
        input: request.params.arguments,
        caller,
        principal,
        signal: extra.signal,
        toolCallId: String(extra.requestId ?? randomUUID()),
      });
    } finally {
      clearInterval(keepAlive);
    }
  });
  return server;
}

/**
 * The 400 for an `MCP-Protocol-Version` header naming a revision the SDK does not speak (a
 * 2026-07-28 client's, say), or null. No header means 2025-03-26, which defined none. The error is
 * no 2026-07-28 error code, so a client of both eras falls back to `initialize`, which negotiates.
 */
function unsupportedVersion(request: Request): Response | null {
  const version = request.headers.get('mcp-protocol-version');
  if (version === null || SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return null;
  return jsonRpcError(
    400,
    TRANSPORT_REFUSED,
    `Bad Request: unsupported MCP-Protocol-Version ${JSON.stringify(version.slice(0, 64))}; supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
  );
}

function jsonRpcError(
  status: number,
  code: number,
  message: string,
  id: string | number | null = null,
): Response {
  return withCors(
    new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id }), {
      status,
      headers: { 'content-type': 'application/json' },
    }),
  );
}
