/**
 * One `tools/call` through the door. The call reaches the host through `actAs(principal, grant)`
 * (the inbound MCP bearer is never forwarded); it fails closed without a grant or consent record
 * and answers `not-implemented` without `actAs`. A token whose scopes do not cover the tool never
 * gets here: the transport answers it a 403 challenge first (`insufficientScope`).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { callHostTool, toolErrorText } from '../agent/tool-call.js';
import type { ActAsGrant, Principal, RegisteredTool, ToolContext } from '../agent/tools.js';
import { describeError } from '../http/logger.js';
import type { DoorContext } from './context.js';
import type { BearerRefusal, DoorCaller } from './mcp/bearer.js';
import { coversScopes, scopesNeededFor } from './scopes.js';

/** Error codes a door tool result can carry (in `structuredContent.error.code`). */
export type DoorToolErrorCode =
  | 'not-implemented'
  | 'forbidden'
  | 'act-as-subject-mismatch'
  | 'act-as-failed'
  | 'validation'
  | 'approval-required'
  | 'tool-failed';

/** What a tool called from the door sees: the usual context plus the host credentials `actAs` minted. */
export interface DoorToolContext extends ToolContext {
  /** Headers the host's API accepts for this user, from `actAs`. */
  credentials: { headers: Record<string, string>; expiresAt?: Date };
}

export function toolError(code: DoorToolErrorCode, message: string): CallToolResult {
  const error = { code, message };
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify({ error }) }],
    structuredContent: { error },
  };
}

/**
 * The refusal of a call the token's scopes do not cover, naming every scope the call needs (so
 * the client steps up in one authorization), or null when they cover it. The transport answers it
 * as an HTTP 403 challenge before the call starts, not as a tool result.
 */
export function insufficientScope(
  context: DoorContext,
  tool: RegisteredTool,
  caller: DoorCaller,
): BearerRefusal | null {
  const needed = scopesNeededFor(tool);
  if (coversScopes(caller.scopes, needed)) return null;
  logToolCall(context, tool, caller, 'insufficient-scope');
  return {
    code: 'insufficient_scope',
    description: `${tool.name} needs the ${needed.join(' and ')} scope, which this connection was not granted`,
    scopes: needed,
  };
}

export async function callTool(
  context: DoorContext,
  call: {
    tool: RegisteredTool;
    input: unknown;
    caller: DoorCaller;
    principal: Principal;
    signal: AbortSignal;
    toolCallId: string;
  },
): Promise<CallToolResult> {
  const { tool, caller, principal } = call;
  const log = (outcome: string, extra: Record<string, unknown> = {}) =>
    logToolCall(context, tool, caller, outcome, extra);

  if (caller.via === 'oauth') {
    // The consent record is the user's standing permission; withdrawn consent stops calls at once.
    const consent = await context.clients.consentOf(caller.subject, caller.clientId);
    if (!consent) {
      log('forbidden');
      return toolError('forbidden', 'This connection has no consent record; reconnect and approve access');
    }
  }
  const actAs = context.actAs;
  if (!actAs) {
    log('not-implemented');
    return toolError(
      'not-implemented',
      'This server cannot act on your behalf yet: the host has not configured actAs',
    );
  }
  const grant: ActAsGrant = {
    subject: caller.subject,
    scopes: caller.scopes,
    clientId: caller.actor ?? caller.clientId,
  };
  if (grant.subject !== principal.subject) {
    log('act-as-subject-mismatch');
    return toolError('act-as-subject-mismatch', 'The grant was issued for another user');
  }
  // The user's own activity feed: what ran on their behalf, from which client or service key.
  const attribution = {
    via: 'door',
    clientId: caller.clientId,
    ...(caller.actor ? { actor: caller.actor } : {}),
  };
  const outcome = await callHostTool(
    { grants: context.approvalGrants, audit: context.audit },
    {
      tool,
      input: call.input ?? {},
      owner: caller.subject,
      context: { principal, via: 'door', signal: call.signal, toolCallId: call.toolCallId },
      credentials: () => actAs(principal, grant),
      audit: { grantUsed: attribution, called: attribution },
      // The door has no approval UI: only a grant the user remembered in the app lets the call run.
      approve: async () => null,
    },
  );
  switch (outcome.status) {
    case 'ok':
      log('ok');
      return okResult(outcome.output);
    case 'invalid-input':
      return toolError('validation', outcome.message);
    case 'no-credentials':
      log('act-as-failed', describeError(outcome.error));
      return toolError('act-as-failed', 'The host refused to act for this user');
    case 'approval-required':
      log('approval-required');
      return toolError(
        'approval-required',
        `${tool.title} needs your approval in the app before it can run from here`,
      );
    case 'failed': {
      log('tool-failed', describeError(outcome.error));
      return toolError('tool-failed', toolErrorText(outcome.error));
    }
  }
}

/** The `door.tool_call` log line: which tool ran for whom, from which client, and how it ended. */
function logToolCall(
  context: DoorContext,
  tool: RegisteredTool,
  caller: DoorCaller,
  outcome: string,
  extra: Record<string, unknown> = {},
): void {
  context.logger.info('door.tool_call', {
    tool: tool.name,
    subject: caller.subject,
    client_id: caller.clientId,
    ...(caller.actor ? { actor: caller.actor } : {}),
    outcome,
    ...extra,
  });
}

/** A result as JSON text, plus `structuredContent` when it is an object. */
function okResult(result: unknown): CallToolResult {
  const text = typeof result === 'string' ? result : (JSON.stringify(result) ?? 'null');
  const structured =
    result !== null && typeof result === 'object' && !Array.isArray(result)
      ? { structuredContent: result as Record<string, unknown> }
      : {};
  return { content: [{ type: 'text', text }], ...structured };
}
