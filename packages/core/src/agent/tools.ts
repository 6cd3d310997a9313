/**
 * The host tool registry: what a host hands `createService({ tools })`, and the normalized form
 * the agent turn loop and the MCP door both read. Keep these types stable: the door depends on them.
 *
 * @see docs/wire.md "Host tools"
 */
import type { JSONSchema7 } from 'ai';
import { z } from 'zod';
import type { RunTrigger } from '../store/database.js';

/** How much a tool can change. Drives approvals (`destructive` parks by default) and MCP hints. */
export type ToolRisk = 'read' | 'write' | 'destructive';

/**
 * Who may see a tool. `end-user` (or unset) tools are offered to the embedded agent and listed
 * by the MCP door; `internal` tools are offered to the embedded agent only.
 */
export type ToolAudience = 'end-user' | 'internal';

/**
 * The signed-in caller, as the host's `principal(request)` returns it. `subject` is the host's
 * own user id; the `service:` namespace is reserved and `kind: 'org'` is refused at the wire.
 */
export interface Principal {
  subject: string;
  /** Only `user` is accepted from a host; other kinds are reserved for the service itself. */
  kind?: 'user' | (string & {});
  email?: string | null;
  name?: string | null;
  /** Anything else the host wants its tools to see (roles, tenant, ...). */
  [extra: string]: unknown;
}

/** A remembered approval: the principal allowed `tool` (with any input, or one exact input) until `expiresAt`. */
export interface Grant {
  id: string;
  subject: string;
  tool: string;
  scope: GrantScope;
  /** Hash of the approved input when `scope` is `input`. */
  inputHash: string | null;
  createdAt: Date;
  expiresAt: Date;
}

/** `tool`: every call of the tool; `input`: only calls with exactly the approved input. */
export type GrantScope = 'tool' | 'input';

/**
 * Where a run came from. A chat turn runs as the signed-in user (`actor` null); an automation's
 * run runs as its owner (a schedule) or as `service:webhook:<source>` (a delivery), and `actor`
 * names the person it answers to: the automation's owner, or whoever asked for a rerun.
 */
export interface RunContext {
  actor: string | null;
  automationId: string | null;
  trigger: RunTrigger;
}

/** A chat turn's context. */
export const CHAT_RUN: RunContext = Object.freeze({ actor: null, automationId: null, trigger: 'chat' });

/**
 * A chat turn's context for `principal`: in an organization's workspace the run is the
 * organization's and `actor` names the member who asked; otherwise the user is the run's own.
 */
export function chatRunOf(principal: Principal): RunContext {
  return principal.kind === 'org' && typeof principal.actor === 'string'
    ? { ...CHAT_RUN, actor: principal.actor }
    : CHAT_RUN;
}

/** What a tool's `execute` receives besides its input. */
export interface ToolContext {
  principal: Principal;
  /** `agent` for the embedded chat, `door` for an MCP client. */
  via: 'agent' | 'door';
  /** Aborted only when the service shuts down; a stop lets running tools finish (they drain). */
  signal: AbortSignal;
  threadId?: string;
  runId?: string;
  toolCallId?: string;
  /** The run's origin (embedded agent only): its trigger, automation and `actor`. */
  run?: RunContext;
  /** The grant that let this call through without asking, when one did. */
  grant?: Grant;
  /**
   * Headers the host's API accepts for this user. From the door: what `actAs` minted. In the
   * embedded agent ("present" mode): the user's own `authorization` and `cookie` from the turn's
   * request, forwarded only when `SERVICE_BASE_URL` is set (else absent).
   */
  credentials?: { headers: Record<string, string>; expiresAt?: Date };
  /**
   * Writes a data part into the turn's UI message stream (embedded agent only; absent from the
   * door). A part with the same type and `id` as an earlier one replaces it in the client's
   * message, so a tool can paint something and repaint it in place as it progresses.
   */
  writeData?: (part: ToolDataPart) => Promise<void>;
}

/** An AI SDK data part a tool writes into the turn's stream. */
export interface ToolDataPart {
  type: `data-${string}`;
  /** Parts of one type with the same id replace each other in place. */
  id: string;
  data: unknown;
}

/** A tool as a host declares it. */
export interface HostTool<INPUT = unknown, OUTPUT = unknown> {
  /** `^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`, unique; the `service_` prefix is reserved. */
  name: string;
  /** Human title for menus and approval cards (overrides may replace it). */
  title?: string;
  description: string;
  /** A zod schema, or a JSON schema of an object. */
  input: z.ZodType<INPUT> | JSONSchema7;
  /**
   * What the tool returns, as a zod schema or a JSON schema. Optional; apps the agent builds may
   * bind only to fields a read tool declares here (a tool without it is checked by a real run).
   */
  output?: z.ZodType | JSONSchema7;
  /** Unset means ungraded: no MCP hint is asserted, and no approval by default. */
  risk?: ToolRisk;
  audience?: ToolAudience;
  /** Default: true for `destructive`, false otherwise. A function decides per call. */
  needsApproval?: boolean | ((input: INPUT, context: ToolContext) => boolean | Promise<boolean>);
  /** Default true. A disabled tool is offered nowhere. */
  enabled?: boolean;
  execute(input: INPUT, context: ToolContext): OUTPUT | Promise<OUTPUT>;
  /**
   * Sees the call's input while the model is still writing it (embedded agent only: the door
   * receives whole inputs). Lets a tool paint a preview before `execute` runs; the input text is
   * unchecked and usually cut off mid-way.
   */
  inputStream?: ToolInputStream;
}

/**
 * A tool's view of its input as the model streams it. Each hook receives the call's context (its
 * `toolCallId` and `writeData` included); none may throw or block long: they run inside the
 * model's stream.
 */
export interface ToolInputStream {
  /** The model started writing a call's input. */
  start?(context: ToolContext): void | Promise<void>;
  /** More input arrived: `text` is all of it so far (partial JSON). */
  delta?(text: string, context: ToolContext): void | Promise<void>;
  /**
   * The input stream ended without `execute` running (the input did not parse or was refused,
   * the call was denied, or the turn stopped). Never called for a call whose `execute` started:
   * `execute` owns whatever the stream began.
   */
  end?(context: ToolContext): void | Promise<void>;
  /**
   * The most input text the stream keeps (characters): once the input grows past it, the text
   * stops growing and `delta` is no longer called (`execute` still gets the whole input). Unset:
   * no limit.
   */
  maxText?: number;
}

/** A tool of any input and output type, as lists of tools hold them. */
// biome-ignore lint/suspicious/noExplicitAny: a list holds tools of every input type
export type AnyHostTool = HostTool<any, any>;

/**
 * Declares a tool with its input type inferred from its zod schema (or, for a JSON schema, a
 * plain object), ready to go in `createService({ tools })`.
 *
 * @example
 * const cancelOrder = defineTool({
 *   name: 'cancel_order',
 *   description: 'Cancels an order',
 *   input: z.object({ orderId: z.string() }),
 *   risk: 'destructive',
 *   execute: ({ orderId }, { principal }) => orders.cancel(principal.subject, orderId),
 * });
 */
export function defineTool<S extends z.ZodType, O>(
  tool: Omit<HostTool<z.output<S>, O>, 'input'> & { input: S },
): AnyHostTool;
export function defineTool<O>(tool: HostTool<Record<string, unknown>, O>): AnyHostTool;
export function defineTool(tool: AnyHostTool): AnyHostTool {
  return tool;
}

/** The result of checking a call's input against the tool's schema. */
export type ParsedInput = { ok: true; value: unknown } | { ok: false; message: string };

/** A validated host tool, as the turn loop and the door consume it. */
export interface RegisteredTool {
  name: string;
  title: string;
  description: string;
  /** Always a JSON schema of an object (converted from zod when given as zod). */
  inputSchema: JSONSchema7;
  /** The JSON schema of the tool's result, or null when the host declared none. */
  outputSchema: JSONSchema7 | null;
  risk: ToolRisk | null;
  audience: ToolAudience;
  enabled: boolean;
  parseInput(input: unknown): ParsedInput;
  needsApproval(input: unknown, context: ToolContext): Promise<boolean>;
  execute(input: unknown, context: ToolContext): Promise<unknown>;
  /** The tool's view of its input while the model writes it, when it has one. */
  inputStream: ToolInputStream | null;
}

/** Everything about the host's tools the agent and the door need. */
export interface ToolRegistry {
  /** Every tool, enabled or not, in declaration order. */
  all(): readonly RegisteredTool[];
  /** Enabled tools only. */
  enabled(): readonly RegisteredTool[];
  get(name: string): RegisteredTool | undefined;
}

/** A grant an away caller (the door) holds; handed to `actAs`. */
export interface ActAsGrant {
  /** The host user the grant was issued for. */
  subject: string;
  /** OAuth scopes (door) the caller holds. */
  scopes: string[];
  /** OAuth client or `svc:<hash8>` for the service-key exchange. */
  clientId?: string;
}

/**
 * How a tool called from away (the MCP door) reaches the host's API as the user: the host returns
 * credentials (headers) its API accepts for `principal`. Fail closed by throwing.
 */
export type ActAs = (
  principal: Principal,
  grant: ActAsGrant,
) => Promise<{ headers: Record<string, string>; expiresAt?: Date }>;

const TOOL_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

/** Thrown at composition when the tool list is malformed; the message says what to fix. */
export class ToolDefinitionError extends Error {
  override name = 'ToolDefinitionError';
  readonly code = 'ERR_SERVICE_TOOL_DEFINITION';
}

/**
 * Validates and normalizes the host's tools. Zod inputs become JSON schemas (so the door can
 * list them) and keep zod's own parsing; JSON-schema inputs are checked for shape only (an
 * object) and passed to the model as they are.
 *
 * `service` holds the service's own tools (`service_*`, such as the apps tools): they follow the
 * host's tools in the registry, and only they may use the reserved prefix.
 */
export function createToolRegistry(
  tools: readonly AnyHostTool[] = [],
  options: { service?: readonly AnyHostTool[] } = {},
): ToolRegistry {
  const registered: RegisteredTool[] = [];
  const byName = new Map<string, RegisteredTool>();
  const entries = [
    ...tools.map((tool, index) => ({ tool, where: `tools[${index}]`, own: false })),
    ...(options.service ?? []).map((tool, index) => ({ tool, where: `service tools[${index}]`, own: true })),
  ];
  for (const { tool: raw, where: at, own } of entries) {
    const tool = raw as HostTool<unknown, unknown>;
    const where = `${at}${typeof tool?.name === 'string' ? ` (${tool.name})` : ''}`;
    if (!tool || typeof tool !== 'object') throw new ToolDefinitionError(`${where} must be an object`);
    if (typeof tool.name !== 'string' || !TOOL_NAME.test(tool.name)) {
      throw new ToolDefinitionError(
        `${where}.name must match ${TOOL_NAME} (letters, digits, _ and -, starting with a letter)`,
      );
    }
    if (tool.name.startsWith('service_') !== own) {
      throw new ToolDefinitionError(
        own
          ? `${where}.name: the service's own tools are named service_*`
          : `${where}.name: the service_ prefix is reserved for the service's own tools`,
      );
    }
    if (byName.has(tool.name)) throw new ToolDefinitionError(`${where}.name is used by two tools`);
    if (typeof tool.description !== 'string' || tool.description.trim() === '') {
      throw new ToolDefinitionError(`${where}.description is required: the model chooses tools by it`);
    }
    if (typeof tool.execute !== 'function')
      throw new ToolDefinitionError(`${where}.execute must be a function`);
    if (tool.risk !== undefined && !['read', 'write', 'destructive'].includes(tool.risk)) {
      throw new ToolDefinitionError(`${where}.risk must be read, write or destructive (or unset)`);
    }
    if (tool.audience !== undefined && !['end-user', 'internal'].includes(tool.audience)) {
      throw new ToolDefinitionError(`${where}.audience must be end-user or internal (or unset)`);
    }
    const schema = toInputSchema(tool.input, where);
    const needsApproval = tool.needsApproval ?? tool.risk === 'destructive';
    const entry: RegisteredTool = {
      name: tool.name,
      title: tool.title ?? tool.name,
      description: tool.description,
      inputSchema: schema.json,
      outputSchema: toOutputSchema(tool.output, where),
      risk: tool.risk ?? null,
      audience: tool.audience ?? 'end-user',
      enabled: tool.enabled !== false,
      parseInput: schema.parse,
      needsApproval: async (input, context) =>
        typeof needsApproval === 'function' ? Boolean(await needsApproval(input, context)) : needsApproval,
      execute: async (input, context) => tool.execute(input, context),
      inputStream: tool.inputStream ?? null,
    };
    registered.push(entry);
    byName.set(entry.name, entry);
  }
  return {
    all: () => registered,
    enabled: () => registered.filter((tool) => tool.enabled),
    get: (name) => byName.get(name),
  };
}

function toOutputSchema(output: unknown, where: string): JSONSchema7 | null {
  if (output === undefined) return null;
  if (output instanceof z.ZodType) {
    return z.toJSONSchema(output, { io: 'output', unrepresentable: 'any' }) as JSONSchema7;
  }
  if (!output || typeof output !== 'object' || Array.isArray(output)) {
    throw new ToolDefinitionError(`${where}.output must be a zod schema or a JSON schema (or unset)`);
  }
  return output as JSONSchema7;
}

function toInputSchema(
  input: unknown,
  where: string,
): { json: JSONSchema7; parse: (value: unknown) => ParsedInput } {
  if (input instanceof z.ZodType) {
    const json = z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' }) as JSONSchema7;
    if (json.type !== 'object') throw new ToolDefinitionError(`${where}.input must describe an object`);
    return {
      json,
      parse: (value) => {
        const parsed = input.safeParse(value);
        return parsed.success
          ? { ok: true, value: parsed.data }
          : { ok: false, message: z.prettifyError(parsed.error) };
      },
    };
  }
  if (!input || typeof input !== 'object' || (input as JSONSchema7).type !== 'object') {
    throw new ToolDefinitionError(`${where}.input must be a zod schema or a JSON schema with type "object"`);
  }
  const json = input as JSONSchema7;
  return {
    json,
    // A JSON-schema tool validates its own input; we only insist on an object.
    parse: (value) =>
      value !== null && typeof value === 'object' && !Array.isArray(value)
        ? { ok: true, value }
        : { ok: false, message: 'input must be an object' },
  };
}
