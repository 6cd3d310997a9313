import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** An open SSE response read in the background: its events and comments as they arrive. */
export interface SseReader {
  status: number;
  headers: Headers;
  events: EventSourceMessage[];
  comments: string[];
  /** Reconnection delays the server asked for (`retry:` lines), in order. */
  retries: number[];
  /** Whether the server ended the stream. */
  readonly ended: boolean;
  /** Resolves once `count` events have arrived (rejects after `timeoutMs`). */
  waitForEvents(count: number, timeoutMs?: number): Promise<EventSourceMessage[]>;
  waitForComment(text: string, timeoutMs?: number): Promise<void>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseReader> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const events: EventSourceMessage[] = [];
  const comments: string[] = [];
  const retries: number[] = [];
  let ended = false;
  const parser = createParser({
    onEvent: (event) => events.push(event),
    onComment: (comment) => comments.push(comment.trim()),
    onRetry: (ms) => retries.push(ms),
  });
  if (response.ok && response.body) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            ended = true;
            break;
          }
          parser.feed(decoder.decode(value, { stream: true }));
        }
      } catch {
        // Closed by the test or the server.
      }
    })();
  }
  const until = async (ready: () => boolean, what: string, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      if (Date.now() > deadline)
        throw new Error(`Timed out waiting for ${what}; have ${JSON.stringify(events)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    retries,
    get ended() {
      return ended;
    },
    async waitForEvents(count, timeoutMs = 5000) {
      await until(() => events.length >= count, `${count} events`, timeoutMs);
      return events.slice(0, count);
    },
    async waitForComment(text, timeoutMs = 5000) {
      await until(() => comments.includes(text), `comment "${text}"`, timeoutMs);
    },
    close: () => controller.abort(),
  };
}
