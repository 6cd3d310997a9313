/**
 * The turn stream on the wire: the AI SDK UI message stream protocol (SSE `data: <json>` frames
 * ending with `data: [DONE]`, header `x-vercel-ai-ui-message-stream: v1`), each frame with an
 * `id:` (the chunk's sequence number in its run) so a reader can resume after it.
 *
 * Pull-based: a frame is produced only when the consumer asks for one, so a slow client applies
 * backpressure instead of growing a buffer. A keepalive comment goes out at once and after every
 * `heartbeatMs` of silence.
 */
import type { SequencedChunk } from '../agent/live-run.js';

export const UI_MESSAGE_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
} as const;

const encoder = new TextEncoder();
const KEEPALIVE = encoder.encode(': keepalive\n\n');
const DONE = encoder.encode('data: [DONE]\n\n');

/** One SSE frame. JSON never contains a raw newline, so `data` is always a single line. */
export function frame(entry: SequencedChunk): Uint8Array {
  return encoder.encode(`id: ${entry.seq}\ndata: ${JSON.stringify(entry.chunk)}\n\n`);
}

export interface TurnStreamOptions {
  heartbeatMs: number;
  headers?: Record<string, string>;
  /** Called once when the stream ends or the client goes away. */
  onClose?: () => void;
}

/**
 * Streams `source` as SSE. `abort` is aborted when the client cancels the body (a disconnect),
 * which ends the reading, not the run.
 */
export function turnStreamResponse(
  source: AsyncGenerator<SequencedChunk>,
  abort: AbortController,
  options: TurnStreamOptions,
): Response {
  let pending: Promise<IteratorResult<SequencedChunk>> | null = null;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    abort.abort();
    void source.return(undefined).catch(() => {});
    options.onClose?.();
  };
  let greeted = false;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!greeted) {
          greeted = true;
          controller.enqueue(KEEPALIVE);
          return;
        }
        pending ??= source.next();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const beat = new Promise<'beat'>((resolve) => {
          timer = setTimeout(() => resolve('beat'), options.heartbeatMs);
        });
        try {
          const result = await Promise.race([pending, beat]);
          if (result === 'beat') {
            controller.enqueue(KEEPALIVE);
            return;
          }
          pending = null;
          if (result.done) {
            controller.enqueue(DONE);
            controller.close();
            close();
            return;
          }
          controller.enqueue(frame(result.value));
        } catch (error) {
          close();
          controller.error(error);
        } finally {
          clearTimeout(timer);
        }
      },
      cancel() {
        close();
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: 200, headers: { ...UI_MESSAGE_STREAM_HEADERS, ...options.headers } });
}
