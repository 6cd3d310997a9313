/**
 * What an app serves and what its buttons may do, shared by the agent's apps tools and the wire's
 * `/apps/:id/open` and `/apps/:id/call`: one rule for both, so neither can be looser.
 *
 * A review-kind remix serves the version a reviewer approved, and until one is approved the host's
 * own component (nothing of the app). Every other app serves its current version. A button press
 * is allowed only when the served document has a button calling that tool with that input.
 *
 * @see docs/apps.md "Tools", docs/wire.md "Opening an app"
 */
import { callHostTool, type HostToolDeps, type HostToolOutcome } from '../../agent/tool-call.js';
import type { RegisteredTool, ToolContext, ToolRegistry } from '../../agent/tools.js';
import { type AppDocument, isQueryBinding, isStateBinding } from '../../apps/index.js';
import { eachNode } from '../../apps/walk.js';
import type { AppRecord, AppStore, AppVersionWithDocument } from './app-store.js';

/**
 * Which version serves: `current` (an app or remix), `approved` (a review remix's approved
 * version), or `original` (a review remix nobody approved yet: the host's own component shows).
 */
export type Serving = 'current' | 'approved' | 'original';

export interface ServedApp {
  app: AppRecord;
  serving: Serving;
  /** The served version with its document; null when the host's original serves. */
  version: AppVersionWithDocument | null;
}

/** The owner's app and the version it serves, or null when they have no such app. */
export async function servedApp(store: AppStore, owner: string, appId: string): Promise<ServedApp | null> {
  const app = await store.getApp(owner, appId);
  if (!app) return null;
  const { current, ...record } = app;
  if (app.kind !== 'review') return { app: record, serving: 'current', version: current };
  if (app.servedVersion === null) return { app: record, serving: 'original', version: null };
  const version =
    app.servedVersion === current.version ? current : await store.getVersion(owner, appId, app.servedVersion);
  // The approved version is always kept (the history cap spares it); a gap serves the original.
  return version
    ? { app: record, serving: 'approved', version }
    : { app: record, serving: 'original', version: null };
}

export interface ButtonCallDeps {
  store: AppStore;
  /** The host's tools: a button reaches only these. */
  hostTools: ToolRegistry;
  calls: HostToolDeps;
}

export interface ButtonCall {
  appId: string;
  tool: string;
  input: Record<string, unknown>;
}

export type ButtonOutcome =
  | { status: 'no-app' }
  | { status: 'no-button'; app: AppRecord }
  | { status: 'no-tool'; app: AppRecord }
  | { status: 'called'; app: AppRecord; tool: RegisteredTool; outcome: HostToolOutcome };

/**
 * One button press of the owner's app: the served document must have a button calling `tool`
 * whose written-out input fields match, and the host tool runs through the guarded path (grants,
 * `approve` for a call no grant covers, the activity record attributed to the app).
 */
export async function pressButton(
  deps: ButtonCallDeps,
  call: ButtonCall,
  context: ToolContext,
  approve: Parameters<typeof callHostTool>[1]['approve'],
): Promise<ButtonOutcome> {
  const owner = context.principal.subject;
  const served = await servedApp(deps.store, owner, call.appId);
  if (!served) return { status: 'no-app' };
  const { app } = served;
  if (!served.version || !hasButtonFor(served.version.document, call.tool, call.input)) {
    return { status: 'no-button', app };
  }
  const tool = deps.hostTools.get(call.tool);
  if (!tool?.enabled) return { status: 'no-tool', app };
  const { writeData: _painting, grant: _grant, ...callContext } = context;
  const attribution = { via: 'app', appId: app.id, ...(context.runId ? { runId: context.runId } : {}) };
  const outcome = await callHostTool(deps.calls, {
    tool,
    input: call.input,
    owner,
    context: callContext,
    audit: { grantUsed: attribution, called: attribution },
    approve,
  });
  return { status: 'called', app, tool, outcome };
}

/**
 * Whether a button of the document calls `tool` with `input`: every literal field of the button's
 * input has exactly that value, every bound field has some value, and nothing else is sent.
 */
export function hasButtonFor(document: unknown, tool: string, input: Record<string, unknown>): boolean {
  const root = (document as { root?: unknown } | null)?.root;
  if (!root || typeof root !== 'object') return false;
  let found = false;
  eachNode(root as AppDocument['root'], (node) => {
    if (found || node.component !== 'Button') return;
    const action = (
      node.props as { action?: { type?: unknown; tool?: unknown; input?: unknown } } | undefined
    )?.action;
    if (action?.type !== 'tool' || action.tool !== tool) return;
    const written = (action.input ?? {}) as Record<string, unknown>;
    if (Object.keys(input).some((key) => !Object.hasOwn(written, key))) return;
    found = Object.entries(written).every(([key, value]) =>
      isQueryBinding(value) || isStateBinding(value)
        ? Object.hasOwn(input, key)
        : Object.hasOwn(input, key) && sameJson(value, input[key]),
    );
  });
  return found;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
