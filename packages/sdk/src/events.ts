import {
  SERVICE_EVENT_KINDS,
  type ServiceEvent,
  type ServiceEventKind,
  serviceEventSchema,
} from '@service/core/schemas';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { backoffDelay, linkedController, sleep } from './backoff.js';
import { errorFromAnswer, readBody, ServiceAuthError, ServiceError } from './errors.js';
import { joinUrl, requireSettings, type TransportSettings } from './transport.js';

export interface SubscribeOptions {
  /** Ends the iteration cleanly (no error) when aborted. */
  signal?: AbortSignal;
  /** Resume after this event id (sent as `Last-Event-ID`); the server replays up to 100 events. */
  lastEventId?: string;
  /** Deliver only these kinds. Default: every canonical kind. */
  kinds?: ServiceEventKind[];
}

/** Reconnection tuning of the event stream. */
export interface ReconnectOptions {
  /** First reconnect delay; doubles per failed attempt, jittered. Default 500 ms. */
  baseDelayMs?: number;
  /** Ceiling of one reconnect delay. Default 30 s. */
  maxDelayMs?: number;
  /**
   * A connection that carries nothing (not even the 25-second `: ping`) for this long is taken for
   * dead and replaced. Default 60 s.
   */
  idleTimeoutMs?: number;
}

const CANONICAL = new Set<string>(SERVICE_EVENT_KINDS);
/** Ids remembered to drop repeats (legacy alias blocks, an overlapping replay). */
const REMEMBERED_IDS = 512;

/**
 * The deployment event stream as an async iterator of canonical events.
 *
 * - Parses with eventsource-parser; legacy alias blocks (same id and payload under an old name)
 *   and any id already delivered are dropped, so each event arrives once.
 * - When the connection drops or the server closes it, reconnects with jittered exponential
 *   backoff and resends `Last-Event-ID`, so missed events are replayed.
 * - Stops with a `ServiceAuthError` on 401/403, the typed error of any other 4xx, and an
 *   `invalid_response` error for a 2xx that is not `text/event-stream`; waits `retry_after` on
 *   429; retries 5xx and network errors.
 * - Ends cleanly when `signal` aborts or the loop breaks.
 */
export async function* subscribeToEvents(
  settings: TransportSettings,
  reconnect: Required<ReconnectOptions>,
  options: SubscribeOptions = {},
): AsyncGenerator<ServiceEvent, void, undefined> {
  const { credential, baseUrl } = requireSettings(settings);
  const url = joinUrl(baseUrl, '/api/deployments/me/events');
  const wanted = options.kinds ? new Set<string>(options.kinds) : CANONICAL;
  const delivered = new RecentIds(REMEMBERED_IDS);
  let lastEventId = options.lastEventId;
  let failures = 0;
  const stopped = () => options.signal?.aborted === true;
  const pause = async (ms: number) => {
    try {
      await sleep(ms, options.signal);
    } catch {
      // Aborted while waiting: the loop condition ends the iteration.
    }
  };

  while (!stopped()) {
    const { controller, release } = linkedController(options.signal);
    try {
      let response: Response;
      try {
        response = await settings.fetch(url, {
          headers: {
            accept: 'text/event-stream',
            authorization: `Bearer ${credential}`,
            'cache-control': 'no-cache',
            ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}),
          },
          signal: controller.signal,
        });
      } catch {
        if (stopped()) return;
        await pause(backoffDelay(++failures, reconnect.baseDelayMs, reconnect.maxDelayMs));
        continue;
      }

      if (!response.ok || !response.body) {
        const error = errorFromAnswer(response.status, response.headers, await readBody(response));
        if (error instanceof ServiceAuthError) throw error;
        if (response.status === 429) {
          failures++;
          const wait = error.retryAfter !== undefined ? error.retryAfter * 1000 : undefined;
          await pause(wait ?? backoffDelay(failures, reconnect.baseDelayMs, reconnect.maxDelayMs));
          continue;
        }
        if (response.status >= 500) {
          await pause(backoffDelay(++failures, reconnect.baseDelayMs, reconnect.maxDelayMs));
          continue;
        }
        throw error;
      }

      const type = response.headers.get('content-type') ?? '';
      if (!/^text\/event-stream\b/i.test(type)) {
        // Some other server (a wrong base URL, a login wall): retrying would loop for ever.
        await response.body.cancel().catch(() => {});
        throw new ServiceError({
          status: response.status,
          code: 'invalid_response',
          message: `Expected an event stream from ${url}, got ${type || 'no content type'}. Is the base URL the platform's?`,
        });
      }

      const pending: EventSourceMessage[] = [];
      const parser = createParser({ onEvent: (message) => pending.push(message) });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      try {
        for (;;) {
          const chunk = await readWithin(reader, reconnect.idleTimeoutMs, controller);
          if (chunk.done) break;
          parser.feed(chunk.value);
          while (pending.length > 0) {
            const message = pending.shift()!;
            // A stream that carried an event block is a good connection: the backoff starts over.
            // A ping alone does not count, or a server that pings and hangs up would be hammered.
            failures = 0;
            const event = accept(message, wanted, delivered);
            if (message.id !== undefined) lastEventId = message.id;
            if (event) {
              delivered.add(event.id);
              yield event;
            }
          }
        }
      } catch {
        // The connection broke or went idle: reconnect below.
      } finally {
        reader.cancel().catch(() => {});
      }
      if (stopped()) return;
      await pause(backoffDelay(++failures, reconnect.baseDelayMs, reconnect.maxDelayMs));
    } finally {
      controller.abort();
      release();
    }
  }
}

/** The canonical event in an SSE block, or null for an alias, a repeat, a ping or a malformed one. */
function accept(message: EventSourceMessage, wanted: Set<string>, delivered: RecentIds): ServiceEvent | null {
  const kind = message.event;
  if (!kind || !CANONICAL.has(kind) || !wanted.has(kind)) return null;
  if (message.id !== undefined && delivered.has(message.id)) return null;
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    return null;
  }
  const parsed = serviceEventSchema.safeParse(data);
  if (!parsed.success || parsed.data.kind !== kind || delivered.has(parsed.data.id)) return null;
  return parsed.data;
}

/** One read, or an error after `idleMs` without a byte (the connection is then aborted). */
async function readWithin(
  reader: ReadableStreamDefaultReader<string>,
  idleMs: number,
  controller: AbortController,
): Promise<ReadableStreamReadResult<string>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`No data for ${idleMs} ms`));
    }, idleMs);
  });
  const read = reader.read();
  // When the idle timer wins, the abandoned read rejects later: that is expected, not unhandled.
  read.catch(() => {});
  try {
    return await Promise.race([read, idle]);
  } finally {
    clearTimeout(timer);
  }
}

/** A bounded set of the most recent ids. */
class RecentIds {
  readonly #ids = new Set<string>();
  constructor(private readonly limit: number) {}
  has(id: string): boolean {
    return this.#ids.has(id);
  }
  add(id: string): void {
    this.#ids.add(id);
    if (this.#ids.size > this.limit) this.#ids.delete(this.#ids.values().next().value!);
  }
}
