/**
 * One host tool call, as the embedded agent and the MCP door both make it: the input checked
 * against the tool's schema, the approval rule applied (a remembered grant lets the call through;
 * without one the caller decides: the agent parks the call until a person answers, the door
 * refuses it), the tool run, and the call put on the owner's activity record.
 *
 * What differs between the callers stays with them: the agent's parking and refusals as denials,
 * the door's scopes, consent, `actAs` and its error results.
 */
import type { AuditLog } from './audit.js';
import type { GrantStore } from './grants.js';
import type { RegisteredTool, ToolContext } from './tools.js';

/** The approval a call runs under once a person said yes. */
export interface ApprovedCall {
  /** Called when the call has ended, whether the tool succeeded or threw. */
  markExecuted(): Promise<void>;
}

export interface HostToolCall {
  tool: RegisteredTool;
  /** The input as the caller sent it. */
  input: unknown;
  /** Whose activity records the call, and whose grants may cover it unless `approver` is given. */
  owner: string;
  /**
   * Who answers for the call when it needs approval: their grants may cover it (an automation's
   * run answers to the person behind it, not to its `service:` owner). Default `owner`.
   */
  approver?: string;
  /** What `execute` receives; `credentials` and `grant` are added here when there are any. */
  context: ToolContext;
  /** The host credentials, asked for once the input is valid (the door's `actAs`). A throw refuses the call. */
  credentials?: () => Promise<NonNullable<ToolContext['credentials']>>;
  /** What the call's audit events say besides the tool (who called, from where). */
  audit: { grantUsed: Record<string, unknown>; called: Record<string, unknown> };
  /**
   * A call that needs approval and no grant covers: the approval it runs under, or null to refuse
   * it (`approval-required`). May throw to refuse it with a reason.
   */
  approve(input: unknown, context: ToolContext): Promise<ApprovedCall | null>;
  /** Called just before `execute` runs (the input was valid and the call allowed). */
  executing?: () => void;
}

export type HostToolOutcome =
  | { status: 'ok'; output: unknown }
  | { status: 'invalid-input'; message: string }
  | { status: 'no-credentials'; error: unknown }
  | { status: 'approval-required' }
  | { status: 'failed'; error: unknown };

export interface HostToolDeps {
  grants: Pick<GrantStore, 'find'>;
  audit: Pick<AuditLog, 'record'>;
}

/** How much of a tool's error message reaches the model and the client. */
export const TOOL_ERROR_TEXT_MAX = 500;

/**
 * What a failed call says about itself: the tool's own error message (never its stack), cut to
 * `TOOL_ERROR_TEXT_MAX` characters: enough for any real reason, not a page of upstream HTML.
 */
export function toolErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : '';
  const text = message.trim() || 'The tool failed.';
  return text.length > TOOL_ERROR_TEXT_MAX ? `${text.slice(0, TOOL_ERROR_TEXT_MAX - 1)}…` : text;
}

/** Runs the call to its outcome; throws only what `approve` throws. */
export async function callHostTool(deps: HostToolDeps, call: HostToolCall): Promise<HostToolOutcome> {
  const { tool, owner } = call;
  const parsed = tool.parseInput(call.input);
  if (!parsed.ok) return { status: 'invalid-input', message: parsed.message };
  const input = parsed.value;
  const context: ToolContext = { ...call.context };
  if (call.credentials) {
    try {
      context.credentials = await call.credentials();
    } catch (error) {
      return { status: 'no-credentials', error };
    }
  }
  let approval: ApprovedCall | null = null;
  if (await tool.needsApproval(input, context)) {
    const approver = call.approver ?? owner;
    const grant = await deps.grants.find(approver, tool.name, input);
    if (grant) {
      context.grant = grant;
      deps.audit.record(approver, 'grant.used', {
        grantId: grant.id,
        tool: tool.name,
        ...call.audit.grantUsed,
      });
    } else {
      approval = await call.approve(input, context);
      if (!approval) return { status: 'approval-required' };
    }
  }
  let outcome: HostToolOutcome;
  call.executing?.();
  try {
    outcome = { status: 'ok', output: await tool.execute(input, context) };
  } catch (error) {
    outcome = { status: 'failed', error };
  }
  await approval?.markExecuted();
  deps.audit.record(owner, 'tool.called', {
    tool: tool.name,
    ...call.audit.called,
    ok: outcome.status === 'ok',
  });
  return outcome;
}
