/**
 * Server-sent event framing (WHATWG HTML "Server-sent events"): `id` and `event` must be one line,
 * `data` is split into one `data:` line per line, a block ends with a blank line, and comments
 * keep idle connections open.
 */
export interface SseBlock {
  id?: string;
  event?: string;
  data: string;
}

const SINGLE_LINE = /^[^\r\n]*$/;

export function formatSse(block: SseBlock): string {
  let out = '';
  if (block.id !== undefined) {
    if (!SINGLE_LINE.test(block.id) || block.id.includes('\0'))
      throw new TypeError('SSE id must be one line');
    out += `id: ${block.id}\n`;
  }
  if (block.event !== undefined) {
    if (!SINGLE_LINE.test(block.event)) throw new TypeError('SSE event name must be one line');
    out += `event: ${block.event}\n`;
  }
  for (const line of block.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** A comment line (`: text`), ignored by clients; used as a heartbeat. */
export function formatSseComment(text: string): string {
  return `: ${text.replace(/[\r\n]+/g, ' ')}\n\n`;
}

/** A `retry:` line: how long a client waits before it reconnects (EventSource honours it). */
export function formatSseRetry(ms: number): string {
  return `retry: ${Math.max(0, Math.trunc(ms))}\n\n`;
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-store',
  connection: 'keep-alive',
  // Proxies such as nginx would otherwise buffer the stream.
  'x-accel-buffering': 'no',
} as const;
