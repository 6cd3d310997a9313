/**
 * The MCP endpoint: Streamable HTTP from `@modelcontextprotocol/sdk`, behind bearer
 * authentication. Every request is authenticated and its principal re-resolved; a null principal
 * revokes the user's grants and ends their sessions (the account-level kill switch).
 *
 * Each request gets its own SDK server and transport (the SDK's stateless mode), so any instance
 * can serve any request; the door keeps sessions itself, in the store, bound to one subject and
 * one client.
 *
 * @see MCP "Streamable HTTP"; RFC 6750 §3
 */
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../agent/tools.js';
import { parseJsonInput } from '../../http/input-guard.js';
import { TtlCache } from '../../internal/ttl-cache.js';
import type { DoorContext } from '../context.js';
import { preflight, withCors } from '../cors.js';
import { OAuthError } from '../oauth/errors.js';
import { readCapped } from '../oauth/form.js';
import type { McpSession } from '../storage/sessions.js';
import { callTool } from '../tool-call.js';
import type { DoorMenu } from '../tool-menu.js';
import { type BearerAuthenticator, bearerChallenge, bearerOf, type DoorCaller } from './bearer.js';

/** Largest JSON-RPC body the door reads (the SDK's own default). */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** A session binding is trusted this long without asking the store; ending one here clears it. */
const SESSION_CACHE_MS = 2000;
/** Progress notifications keep a long tool call alive: clients give up after about 60 s of silence. */
export const PROGRESS_EVERY_MS = 15_000;
const SERVER_VERSION = '1.0.0';

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
    if (request.method === 'OPTIONS') return preflight('GET, POST, DELETE, OPTIONS');
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
      case 'DELETE':
        if (sessionId === null)
          return jsonRpcError(400, ErrorCode.InvalidRequest, 'Mcp-Session-Id header is required');
        await context.sessions.end(sessionId);
        sessionCache.delete(sessionId);
        return withCors(new Response(null, { status: 200 }));
      default:
        // No server-initiated stream: every answer rides on the POST that asked for it.
        return withCors(new Response(null, { status: 405, headers: { allow: 'POST, DELETE, OPTIONS' } }));
    }
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
    const initializing = Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body);
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

function jsonRpcError(status: number, code: number, message: string): Response {
  return withCors(
    new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
      status,
      headers: { 'content-type': 'application/json' },
    }),
  );
}
