/**
 * What a Kit button does when pressed, as a function of its written action, so the rules are
 * testable without a browser: ask first when the document says so, apply `setState` locally,
 * resolve a tool input's bindings at the moment of the press (not at render), hand the action to
 * the host, and turn a failure into words to show next to the button.
 */
import { isRecord, resolveValue, type Scope } from './bindings.js';

/** An action a button ran, its tool input resolved from the bindings at the moment of the press. */
export type AppAction =
  | { type: 'tool'; tool: string; input: Record<string, unknown> }
  | { type: 'setState'; key: string; value: unknown };

/** A button's action as written in the document (a tool input may still hold bindings). */
export type WrittenAction =
  | { type: 'tool'; tool: string; input: unknown }
  | { type: 'setState'; key: string; value: unknown };

/** The action as written, if it is one the Kit knows; anything else is no action. */
export function actionOf(value: unknown): WrittenAction | null {
  if (!isRecord(value)) return null;
  if (value.type === 'tool' && typeof value.tool === 'string') {
    return { type: 'tool', tool: value.tool, input: value.input };
  }
  if (value.type === 'setState' && typeof value.key === 'string') {
    return { type: 'setState', key: value.key, value: value.value };
  }
  return null;
}

export interface ActionRunner {
  scope: Scope;
  setState(key: string, value: unknown): void;
  onAction: ((action: AppAction) => void | Promise<void>) | undefined;
  /** Asks the person a yes/no question (the document's `confirm`); the page's `window.confirm` in a browser. */
  ask(question: string): boolean;
  /** Told when a tool call starts and ends, so the button can show it is busy. */
  busy(on: boolean): void;
}

/** Runs a pressed button's action; answers what went wrong, in words to show, or null. */
export async function runAction(
  action: WrittenAction,
  confirm: string,
  runner: ActionRunner,
): Promise<string | null> {
  if (confirm && !runner.ask(confirm)) return null;
  if (action.type === 'setState') {
    runner.setState(action.key, action.value);
    return attempt(() => runner.onAction?.({ type: 'setState', key: action.key, value: action.value }));
  }
  const input: Record<string, unknown> = {};
  if (isRecord(action.input)) {
    for (const [key, value] of Object.entries(action.input)) input[key] = resolveValue(value, runner.scope);
  }
  runner.busy(true);
  try {
    return await attempt(() => runner.onAction?.({ type: 'tool', tool: action.tool, input }));
  } finally {
    runner.busy(false);
  }
}

async function attempt(run: () => void | Promise<void>): Promise<string | null> {
  try {
    await run();
    return null;
  } catch (failure) {
    return failure instanceof Error && failure.message ? failure.message : 'The action failed.';
  }
}
