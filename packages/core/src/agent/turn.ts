/**
 * One agent turn: the thread's history (windowed), the host tools (with approvals and grants),
 * the model streamed through the AI SDK, every UI message chunk handed to the live run.
 *
 * A stop aborts the model's stream at once; host tool calls already running are not cut: the
 * turn waits for them and streams their results before it ends (`abort`, then `finish`).
 */
import {
  APICallError,
  convertToModelMessages,
  InvalidToolInputError,
  jsonSchema,
  type LanguageModel,
  NoSuchToolError,
  RetryError,
  readUIMessageStream,
  stepCountIs,
  streamText,
  type ToolSet,
  tool,
  type UIMessage,
  type UIMessageChunk,
} from 'ai';
import { describeError, type Logger } from '../http/logger.js';
import type { ApprovalStore } from './approvals.js';
import type { AuditLog } from './audit.js';
import type { GrantStore } from './grants.js';
import { capToolOutput, windowMessages } from './history.js';
import { newId } from './ids.js';
import type { LiveRun } from './live-run.js';
import type { ThreadStore } from './threads.js';
import { callHostTool, toolErrorText } from './tool-call.js';
import type { RegisteredTool, ToolContext, ToolInputStream, ToolRegistry } from './tools.js';

export interface TurnDeps {
  audit: AuditLog;
  threads: ThreadStore;
  approvals: ApprovalStore;
  grants: GrantStore;
  tools: ToolRegistry;
  /** The names `surfaces.agent` of the overrides allows, or null for every enabled tool. */
  agentSurface: Set<string> | null;
  logger: Logger;
  /** Null when neither the composition nor the environment names a model. */
  model: LanguageModel | null;
  system?: string;
  toolOutputCap: number;
  maxOutputTokens?: number;
  historyWindow?: number;
  /** Gives file parts naming stored files their bytes for the model (the stored thread keeps URLs). */
  inlineFiles?: (owner: string, messages: UIMessage[]) => Promise<UIMessage[]>;
  maxSteps: number;
  approvalTtlMs: number;
  /** Aborted when the service closes. */
  shutdown: AbortSignal;
  setStatus(run: LiveRun, status: 'running' | 'awaiting_approval'): Promise<void>;
}

export interface TurnOutcome {
  status: 'completed' | 'failed' | 'cancelled';
  errorCode?: string;
  errorMessage?: string;
  message: UIMessage | null;
}

/**
 * A tool call that ended without an output (denied, expired, dropped, invalid or thrown). It is
 * the call's result, not the turn's: the model reads the message as the tool's answer (an
 * `error-text` result) and goes on, the client sees it on the call, and the run is not failed by it.
 */
export class ToolCallFailure extends Error {
  override name = 'ToolCallFailure';
}

/** An error whose message is safe, and meant, to reach the client and the model. */
export class TurnError extends Error {
  override name = 'TurnError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const MODEL_NOT_CONFIGURED =
  'No model is configured: pass `model` (an AI SDK LanguageModel) to createService, or set SERVICE_MODEL with AI_GATEWAY_API_KEY.';

/** Runs the turn to its end; never throws. */
export async function runTurn(run: LiveRun, deps: TurnDeps): Promise<TurnOutcome> {
  const messageId = newId('msg');
  let failure: { code: string; message: string } | null = null;
  /** Messages of calls the model got wrong (the SDK reports each twice: as an error, then as its text). */
  const callErrors = new Set<string>();
  /** The host tool calls this turn started, by tool call id. */
  const started = new Map<string, Promise<SettledCall>>();
  /** Tool inputs the model is writing to a tool that watches them, by tool call id. */
  const inputs = new Map<string, StreamedInput>();
  const stopped = AbortSignal.any([run.abortSignal, deps.shutdown]);
  try {
    if (!deps.model) throw new TurnError('model_not_configured', MODEL_NOT_CONFIGURED);
    const stored = run.knownHistory ?? (await deps.threads.messages(run.owner, run.threadId));
    // Reading the files (a blob store's answer) waits no longer than the turn may run.
    const history = deps.inlineFiles
      ? await unlessStopped(deps.inlineFiles(run.owner, stored), stopped)
      : stored;
    const tools = toolSet(run, deps, started, inputs);
    const messages = windowMessages(
      await convertToModelMessages(history, { tools, ignoreIncompleteToolCalls: true }),
      deps.historyWindow,
    );
    const result = streamText({
      model: deps.model,
      ...(deps.system ? { system: deps.system } : {}),
      messages,
      tools,
      ...(deps.maxOutputTokens ? { maxOutputTokens: deps.maxOutputTokens } : {}),
      stopWhen: stepCountIs(deps.maxSteps),
      abortSignal: stopped,
      onError: ({ error }) => {
        failure ??= failureOf(error);
        deps.logger.error('turn model error', { run_id: run.id, ...describeError(error) });
      },
    });
    const stream = result.toUIMessageStream({
      generateMessageId: () => messageId,
      sendReasoning: true,
      // Called for a tool call's error too (its `errorText`): that one is the call's, not the turn's.
      onError: (error) => {
        const callError = callErrorText(error, callErrors);
        if (callError !== null) return callError;
        failure ??= failureOf(error);
        return failure.message;
      },
      messageMetadata: ({ part }) =>
        part.type === 'start'
          ? { threadId: run.threadId, runId: run.id }
          : part.type === 'finish'
            ? { threadId: run.threadId, runId: run.id, status: statusOf(run, failure) }
            : undefined,
    });
    let aborted: UIMessageChunk | null = null;
    let finished = false;
    for await (const chunk of stream) {
      // Held back: the results of calls still running go out first.
      if (chunk.type === 'abort') aborted = chunk;
      else {
        if (chunk.type === 'finish') finished = true;
        // An input stream that ends without its call running is closed before the message ends.
        if (chunk.type === 'finish') await endInputs(deps, inputs);
        run.emit(refusalAsDenial(run, chunk));
        if (chunk.type === 'tool-input-error') await endInputs(deps, inputs, chunk.toolCallId);
      }
    }
    if (aborted) {
      await drainCalls(run, started);
      await endInputs(deps, inputs);
      run.emit(aborted);
      run.emit({
        type: 'finish',
        messageMetadata: { threadId: run.threadId, runId: run.id, status: statusOf(run, failure) },
      });
    } else if (!finished) {
      // A failed model call ends the SDK's stream at its error, without a finish.
      run.emit({
        type: 'finish',
        messageMetadata: { threadId: run.threadId, runId: run.id, status: statusOf(run, failure) },
      });
    }
  } catch (error) {
    await endInputs(deps, inputs);
    // The client still gets a well-formed message: start, the error (or the stop), finish.
    if (!run.chunks.some((c) => c.type === 'start')) {
      run.emit({ type: 'start', messageId, messageMetadata: { threadId: run.threadId, runId: run.id } });
    }
    if (stopped.aborted && !(error instanceof TurnError)) {
      // Stopped while the turn was being prepared: it ends as a stopped stream does.
      run.emit({ type: 'abort' });
    } else {
      failure ??= failureOf(error);
      if (!(error instanceof TurnError)) {
        deps.logger.error('turn failed', { run_id: run.id, ...describeError(error) });
      }
      run.emit({ type: 'error', errorText: failure.message });
    }
    run.emit({
      type: 'finish',
      messageMetadata: { threadId: run.threadId, runId: run.id, status: statusOf(run, failure) },
    });
  }
  const status = statusOf(run, failure);
  return {
    status,
    ...(failure ? { errorCode: failure.code, errorMessage: failure.message } : {}),
    message: withDecisions(await assemble(run.chunks), run.decisions),
  };
}

/**
 * The message with the user's decisions on its tool parts (`approval: { id, approved, reason? }`),
 * as the client that decided shows them: the stream carries only the request, and later turns
 * read a denial and its reason from the stored part.
 */
function withDecisions(message: UIMessage | null, decisions: LiveRun['decisions']): UIMessage | null {
  if (!message || decisions.size === 0) return message;
  for (const part of message.parts) {
    const approval = (part as { approval?: { id: string } }).approval;
    const decision = approval && decisions.get(approval.id);
    if (decision) Object.assign(approval, decision);
  }
  return message;
}

/** `work`'s value, or the stop's reason once `signal` aborts first. */
function unlessStopped<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onStop = () => reject(signal.reason);
    signal.addEventListener('abort', onStop, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onStop));
  });
}

function statusOf(run: LiveRun, failure: { code: string } | null): TurnOutcome['status'] {
  if (run.stopRequested) return 'cancelled';
  return failure ? 'failed' : 'completed';
}

/**
 * The text of an error that belongs to one tool call, not to the turn: a call that failed on our
 * side, or one the model got wrong (an unknown tool, input the SDK could not parse), which the
 * model reads back and can correct. Null for any other error.
 */
function callErrorText(error: unknown, callErrors: Set<string>): string | null {
  if (error instanceof ToolCallFailure) return error.message;
  if (NoSuchToolError.isInstance(error) || InvalidToolInputError.isInstance(error)) {
    callErrors.add(error.message);
    return error.message;
  }
  if (typeof error === 'string' && callErrors.has(error)) return error;
  return null;
}

/** What the user reads when the model's provider refused the call for want of credit (HTTP 402). */
export const OUT_OF_CREDIT = 'The workspace is out of credit: top it up, then send the message again.';

function failureOf(error: unknown): { code: string; message: string } {
  if (error instanceof TurnError) return { code: error.code, message: error.message };
  // The provider's body is not passed on: only that the workspace must be topped up.
  const cause = RetryError.isInstance(error) ? error.lastError : error;
  if (APICallError.isInstance(cause) && cause.statusCode === 402) {
    return { code: 'insufficient_credit', message: OUT_OF_CREDIT };
  }
  return { code: 'model_error', message: 'The model call failed. The error has been logged.' };
}

/** A declined or dropped call fails inside the SDK; the client is told it was denied, which it was. */
function refusalAsDenial(run: LiveRun, chunk: UIMessageChunk): UIMessageChunk {
  if (chunk.type === 'tool-output-error' && run.refused.has(chunk.toolCallId)) {
    return { type: 'tool-output-denied', toolCallId: chunk.toolCallId };
  }
  return chunk;
}

/** The assistant message the chunks describe, as the client assembled it. */
async function assemble(chunks: UIMessageChunk[]): Promise<UIMessage | null> {
  let last: UIMessage | null = null;
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(unshared(chunk));
      controller.close();
    },
  });
  try {
    for await (const message of readUIMessageStream({ stream, terminateOnError: false })) last = message;
  } catch {
    // A malformed sequence keeps what was assembled so far.
  }
  return last && last.parts.length > 0 ? structuredClone(last) : null;
}

/**
 * A data chunk copied before the AI SDK reads it: the SDK keeps a data part's first chunk as the
 * message's part and repaints it in place with each later chunk of the same id, which would
 * rewrite the chunks the run keeps (and replays) to their last state.
 */
function unshared(chunk: UIMessageChunk): UIMessageChunk {
  return chunk.type.startsWith('data-') ? { ...chunk } : chunk;
}

/** Why a call did not run, as the model (and the client) reads it. */
export const REFUSALS = {
  declined: 'The user denied this call.',
  expired: 'The approval expired.',
  dropped: 'The run was stopped before this call was approved.',
} as const;

/** A host tool call as it ended, kept so a stop can still stream its result. */
interface SettledCall {
  toolName: string;
  input: unknown;
  outcome: { ok: true; output: unknown } | { ok: false; errorText: string };
}

/** Why a call the model asked for after a stop did not run. */
const NOT_STARTED = 'The run was stopped before this call started.';

/** A call's input as the model writes it, for a tool that watches it (`inputStream`). */
interface StreamedInput {
  text: string;
  /** The input grew past the stream's `maxText`: no more text is kept, no more deltas go out. */
  capped: boolean;
  stream: ToolInputStream;
  context: ToolContext;
}

function toolSet(
  run: LiveRun,
  deps: TurnDeps,
  started: Map<string, Promise<SettledCall>>,
  inputs: Map<string, StreamedInput>,
): ToolSet {
  const set: ToolSet = {};
  for (const registered of deps.tools.enabled()) {
    // Curation, not permission: the service's own tools are never curated away.
    const own = registered.name.startsWith('service_');
    if (deps.agentSurface && !own && !deps.agentSurface.has(registered.name)) continue;
    set[registered.name] = tool({
      description: registered.description,
      inputSchema: jsonSchema(registered.inputSchema),
      ...(registered.inputStream ? inputHooks(run, deps, registered, registered.inputStream, inputs) : {}),
      execute: async (input: unknown, options: { toolCallId: string }) => {
        // Past a stop no call starts: the model's stream was aborted, only running calls drain.
        if (run.stopRequested) {
          await endInputs(deps, inputs, options.toolCallId);
          throw new ToolCallFailure(NOT_STARTED);
        }
        // Once the call settled, its input stream is over; a tool whose execute never ran (its
        // input was refused) closes its preview before the call's result goes out. One whose
        // execute started owns what its stream began: its `end` is not called.
        const executing = () => inputs.delete(options.toolCallId);
        const call = callTool(run, deps, registered, input, options.toolCallId, executing).finally(() =>
          endInputs(deps, inputs, options.toolCallId),
        );
        started.set(options.toolCallId, settle(registered.name, input, call));
        return call;
      },
      toModelOutput: ({ output }) => capToolOutput(output, deps.toolOutputCap),
    });
  }
  return set;
}

/**
 * The AI SDK's input hooks, handing a tool its input as the model writes it. A hook that throws
 * is logged and ignored: a preview never breaks the model's stream.
 */
function inputHooks(
  run: LiveRun,
  deps: TurnDeps,
  registered: RegisteredTool,
  stream: ToolInputStream,
  inputs: Map<string, StreamedInput>,
) {
  const guarded = async (hook: () => void | Promise<void>) => {
    try {
      await hook();
    } catch (error) {
      deps.logger.warn('tool input hook failed', {
        run_id: run.id,
        tool: registered.name,
        ...describeError(error),
      });
    }
  };
  return {
    onInputStart: async ({ toolCallId }: { toolCallId: string }) => {
      // A preview follows the call's own start on the stream, so the client has the call first.
      const context = toolContext(run, deps, toolCallId, (id) => run.toolInputStarted(id));
      const entry: StreamedInput = { text: '', capped: false, stream, context };
      inputs.set(toolCallId, entry);
      if (stream.start) await guarded(() => stream.start?.(context));
    },
    onInputDelta: async ({ toolCallId, inputTextDelta }: { toolCallId: string; inputTextDelta: string }) => {
      const entry = inputs.get(toolCallId);
      if (!entry || entry.capped) return;
      // A huge input's text is not kept (nor re-read by each delta) without bound: past the cap
      // the previews stop; execute still sees the whole input and judges it.
      if (stream.maxText !== undefined && entry.text.length + inputTextDelta.length > stream.maxText) {
        entry.capped = true;
        return;
      }
      entry.text += inputTextDelta;
      if (stream.delta) await guarded(() => stream.delta?.(entry.text, entry.context));
    },
  };
}

/** Tells the tools whose input streams are still open (or only `toolCallId`'s) that they ended. */
async function endInputs(deps: TurnDeps, inputs: Map<string, StreamedInput>, toolCallId?: string) {
  const ids = toolCallId === undefined ? [...inputs.keys()] : [toolCallId];
  for (const id of ids) {
    const entry = inputs.get(id);
    if (!entry) continue;
    inputs.delete(id);
    try {
      await entry.stream.end?.(entry.context);
    } catch (error) {
      deps.logger.warn('tool input hook failed', { run_id: entry.context.runId, ...describeError(error) });
    }
  }
}

/** What a call's tool receives besides its input; its data parts wait for `ready` first. */
function toolContext(
  run: LiveRun,
  deps: TurnDeps,
  toolCallId: string,
  ready: (toolCallId: string) => Promise<void>,
): ToolContext {
  return {
    principal: run.principal,
    via: 'agent',
    signal: deps.shutdown,
    threadId: run.threadId,
    runId: run.id,
    toolCallId,
    run: run.origin,
    ...(run.credentials ? { credentials: run.credentials } : {}),
    writeData: async (part) => {
      await ready(toolCallId);
      run.emit({ type: part.type, id: part.id, data: part.data });
    },
  };
}

async function settle(toolName: string, input: unknown, call: Promise<unknown>): Promise<SettledCall> {
  try {
    return { toolName, input, outcome: { ok: true, output: await call } };
  } catch (error) {
    return { toolName, input, outcome: { ok: false, errorText: toolErrorText(error) } };
  }
}

/**
 * After a stop: waits for the calls still running (a host tool is never cut mid-way) and streams
 * the result of each one the aborted stream did not carry, so the stored message has them all.
 */
async function drainCalls(run: LiveRun, started: Map<string, Promise<SettledCall>>): Promise<void> {
  const ended = new Set(
    run.chunks.flatMap((c) =>
      c.type === 'tool-output-available' || c.type === 'tool-output-error' || c.type === 'tool-output-denied'
        ? [c.toolCallId]
        : [],
    ),
  );
  for (const [toolCallId, settled] of started) {
    const { toolName, input, outcome } = await settled;
    if (ended.has(toolCallId)) continue;
    if (!run.hasToolInput(toolCallId))
      run.emit({ type: 'tool-input-available', toolCallId, toolName, input });
    if (outcome.ok) run.emit({ type: 'tool-output-available', toolCallId, output: outcome.output });
    else
      run.emit(refusalAsDenial(run, { type: 'tool-output-error', toolCallId, errorText: outcome.errorText }));
  }
}

async function callTool(
  run: LiveRun,
  deps: TurnDeps,
  registered: RegisteredTool,
  rawInput: unknown,
  toolCallId: string,
  executing: () => void,
): Promise<unknown> {
  run.calls++;
  try {
    return await runHostTool(run, deps, registered, rawInput, toolCallId, executing);
  } finally {
    run.calls--;
    // The last call still running has ended while others wait: the run may pause now.
    if (run.parked > 0) pauseWhenQuiet(run);
  }
}

async function runHostTool(
  run: LiveRun,
  deps: TurnDeps,
  registered: RegisteredTool,
  rawInput: unknown,
  toolCallId: string,
  executing: () => void,
): Promise<unknown> {
  const outcome = await callHostTool(deps, {
    tool: registered,
    input: rawInput,
    executing,
    owner: run.owner,
    approver: approverOf(run),
    // Parts follow the call's own input on the stream, so the client has the call they belong to.
    context: toolContext(run, deps, toolCallId, (id) => run.toolInputSeen(id)),
    audit: {
      grantUsed: { runId: run.id },
      called: { runId: run.id, threadId: run.threadId, toolCallId },
    },
    approve: async (input) => {
      const approvalId = await park(run, deps, registered, input, toolCallId);
      return { markExecuted: () => deps.approvals.markExecuted(approvalId) };
    },
  });
  switch (outcome.status) {
    case 'ok':
      return outcome.output;
    case 'failed':
      deps.logger.warn('tool failed', {
        run_id: run.id,
        tool: registered.name,
        ...describeError(outcome.error),
      });
      throw new ToolCallFailure(toolErrorText(outcome.error));
    case 'invalid-input':
      throw new ToolCallFailure(`Invalid input for ${registered.name}: ${outcome.message}`);
    default:
      // Neither happens here: no credentials are asked for, and approve() approves or throws.
      throw new ToolCallFailure(`${registered.name} did not run (${outcome.status})`);
  }
}

/**
 * Who decides the run's calls, and whose grants cover them: an automation's run asks the person
 * it answers to (nobody signs in as `service:webhook:<source>`).
 */
function approverOf(run: LiveRun): string {
  return run.origin.actor ?? run.owner;
}

/** Parks the call until a decision; returns the approval id when approved, throws otherwise. */
async function park(
  run: LiveRun,
  deps: TurnDeps,
  registered: RegisteredTool,
  input: unknown,
  toolCallId: string,
): Promise<string> {
  const approver = approverOf(run);
  const approvalId = await deps.approvals.create({
    owner: approver,
    runId: run.id,
    threadId: run.threadId,
    toolCallId,
    tool: registered.name,
    input,
    ttlMs: deps.approvalTtlMs,
  });
  await run.toolInputSeen(toolCallId);
  run.emit({ type: 'tool-approval-request', approvalId, toolCallId });
  deps.audit.record(approver, 'approval.requested', {
    approvalId,
    tool: registered.name,
    runId: run.id,
  });
  if (run.parked++ === 0) await deps.setStatus(run, 'awaiting_approval');
  pauseWhenQuiet(run);
  let outcome: Awaited<ReturnType<ApprovalStore['waitForDecision']>>;
  try {
    outcome = await deps.approvals.waitForDecision(approvalId, () => run.stopRequested, run.stopSignal);
  } finally {
    if (--run.parked === 0 && !run.stopRequested) await deps.setStatus(run, 'running');
  }
  if (outcome === 'approved') {
    run.decisions.set(approvalId, { approved: true });
    return approvalId;
  }
  // A denial (by the user, or by their stop) reads as one; an expiry is an error naming itself.
  if (outcome !== 'expired') run.refused.add(toolCallId);
  if (outcome === 'declined') {
    const reason = await deps.approvals.reasonOf(approvalId).catch(() => null);
    run.decisions.set(approvalId, { approved: false, ...(reason ? { reason } : {}) });
    if (reason) throw new ToolCallFailure(`${REFUSALS.declined} Their reason: ${reason}`);
  }
  throw new ToolCallFailure(REFUSALS[outcome]);
}

/**
 * Emits the pause marker once the run is quiet: every call in progress parked. The AI SDK runs a
 * step's tool calls only after the model's stream for the step has finished, so by then the
 * model is done too; the check waits one macrotask so the chunks already on their way through
 * the SDK's stream (a result that just came in, the step's last text) are emitted before it.
 */
function pauseWhenQuiet(run: LiveRun): void {
  setTimeout(() => run.markPaused(), 0);
}
