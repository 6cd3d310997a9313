/**
 * What the model sees of a thread: the last N whole messages (never a tool result without its
 * call), and tool results cut to `toolOutputCap` characters. The stored thread is never touched.
 */
import type { ModelMessage } from 'ai';

/**
 * The last `window` model messages, shrunk so it never starts with tool results whose calls fell
 * outside it. The newest message (the user's turn) is always kept.
 */
export function windowMessages(messages: ModelMessage[], window: number | undefined): ModelMessage[] {
  if (window === undefined || messages.length <= window) return messages;
  let start = messages.length - window;
  // A `tool` message answers the assistant message before it: starting on one would split a pair.
  while (start < messages.length - 1 && messages[start]?.role === 'tool') start++;
  return messages.slice(start);
}

/** Marker appended to a truncated tool result so the model knows it saw part of it. */
export function truncationNote(shown: number, total: number): string {
  return `\n[truncated: showing ${shown} of ${total} characters]`;
}

/**
 * A tool result as the model sees it: JSON as is when it fits in `cap` characters (0 = no
 * limit), else the first `cap` characters of its JSON text plus a note saying it was cut.
 */
export function capToolOutput(
  output: unknown,
  cap: number,
): { type: 'json'; value: NonNullable<unknown> } | { type: 'text'; value: string } {
  const text = typeof output === 'string' ? output : (JSON.stringify(output) ?? 'null');
  if (cap === 0 || text.length <= cap) {
    return typeof output === 'string'
      ? { type: 'text', value: output }
      : { type: 'json', value: (output ?? null) as NonNullable<unknown> };
  }
  return { type: 'text', value: text.slice(0, cap) + truncationNote(cap, text.length) };
}
