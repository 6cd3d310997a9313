/**
 * The params of the requests the door serves, checked before the SDK's server sees them: the SDK
 * parses a handler's schema in a way that turns a client's mistake into -32603 Internal error with
 * the schema issues as its message. Checked here, a malformed request answers -32602 Invalid params
 * with one readable line (`params.cursor: Invalid input: expected string, received number`).
 *
 * @see JSON-RPC 2.0 §5.1 "Error object"; MCP 2025-11-25 "Basic" §Error Codes
 */
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  type JSONRPCRequest,
  ListToolsRequestSchema,
  PingRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describeIssues } from '../../http/issues.js';

/** Each method the door's server answers, by the SDK's own schema of its request. */
const REQUEST_SCHEMAS = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
} as const;

/** Issues named in one message: enough to fix a request, short enough to read. */
const MAX_ISSUES = 5;

/**
 * Why a request's params are not what its method takes (`Invalid params: params.name: ...`), or
 * null when they are, and for a method the server does not answer (the SDK's -32601 says so).
 *
 * @example invalidParams({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: 5 } })
 * // "Invalid params: params.cursor: Invalid input: expected string, received number"
 */
export function invalidParams(message: JSONRPCRequest): string | null {
  if (!Object.hasOwn(REQUEST_SCHEMAS, message.method)) return null;
  const schema = REQUEST_SCHEMAS[message.method as keyof typeof REQUEST_SCHEMAS];
  const parsed = schema.safeParse(message);
  if (!parsed.success) return `Invalid params: ${describeIssues(parsed.error, { limit: MAX_ISSUES })}`;
  // The whole menu is one page, so no list ever gave a cursor: any cursor is one the server did
  // not issue, which MCP answers -32602 rather than as a page (a client paging would see the first
  // page again, for ever).
  if (message.method === 'tools/list' && message.params?.cursor !== undefined)
    return 'Invalid params: params.cursor: this server lists every tool at once and issues no cursor';
  return null;
}
