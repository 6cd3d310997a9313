import type { ServiceEvent, ServiceEventKind } from '@service/core/schemas';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { backoffDelay, linkedController, sleep, startTimeout } from './backoff.js';
import {
  errorFromAnswer,
  readBody,
  ServiceAuthError,
  ServiceConfigError,
  ServiceConnectionError,
  ServiceError,
  withAppKeyHint,
} from './errors.js';
import { callbackOption, kindsOption } from './options.js';
import { isServiceEvent, SERVICE_EVENT_KINDS } from './shapes.js';
import { isHeaderSafe, joinUrl, requireSettings, type TransportSettings } from './transport.js';

/** What `onError` learns about a failed attempt that will be retried. */
export interface StreamRetry {
  /** Consecutive failed attempts so far, this one included. */
  attempt: number;
  /** How long the stream waits before connecting again. */
  delayMs: number;
}

export interface SubscribeOptions {
  /** Ends the iteration cleanly (no error) when aborted. */
  signal?: AbortSignal;
  /** Resume after this event id (sent as `Last-Event-ID`); the server replays up to 100 events. */
  lastEventId?: string;
  /** Deliver only these kinds. Default: every canonical kind. */
  kinds?: ServiceEventKind[];
  /**
   * Called for each failure the stream retries (unreachable host, header timeout, 429, 5xx, a
   * connection that broke or went silent), with the error and when it tries again. Failures that
   * end the stream are thrown by the iterator instead.
   */
  onError?: (error: Error, retry: StreamRetry) => void;
  /** Called as the stream connects again after a drop or a failure, with the id it resumes after. */
  onReconnect?: (info: { attempt: number; lastEventId: string | undefined }) => void;
  /**
   * Called when the server could not replay everything after the id the stream resumed from (it
   * keeps an app's last 100 events): the events after `after`, up to and including
   * `resumedAfter`, are gone. Re-read what you keep from them (`connections.list()`).
   */
  onMissed?: (info: { after: string; resumedAfter: string }) => void;
}

/** Reconnection tuning of the event stream. */
export interface ReconnectOptions {
  /** First reconnect delay; doubles per failed attempt, jittered. Default 500 ms. */
  baseDelayMs?: number;
  /** Ceiling of one reconnect delay. Default 30 s. */
  maxDelayMs?: number;
  /**
   * A connection that carries nothing (not even the 25-second `: ping`) for this long is taken for
   * dead and replaced. Default 60 s; `Infinity` never gives up on a silent connection.
   */
  idleTimeoutMs?: number;
  /**
   * A server that has not answered with its headers within this long is given up on. Default
   * 15 s; `Infinity` waits as long as it takes.
   */
  headersTimeoutMs?: number;
  /**
   * Consecutive failed attempts (no event delivered in between) after which the iterator throws
   * the last failure. Default 10 (about two and a half minutes of backoff); `Infinity` never gives up.
   */
  maxAttempts?: number;
}

const CANONICAL = new Set<string>(SERVICE_EVENT_KINDS);
/** Ids remembered to drop repeats (legacy alias blocks, an overlapping replay). */
const REMEMBERED_IDS = 512;
const EVENTS_PATH = '/api/deployments/me/events';
/** The platform's answer header naming the event id the stream starts after. */
const STREAM_POSITION_HEADER = 'service-last-event-id';
/** The shortest wait before reconnecting, whatever a server says (the platform says 1 s or more). */
const MIN_RETRY_MS = 250;

/**
 * The deployment event stream as an async iterator of canonical events.
 *
 * - Parses with eventsource-parser; legacy alias blocks (same id and payload under an old name)
 *   and any id already delivered are dropped, so each event arrives once.
 * - When the connection drops or the server closes it, reconnects with jittered exponential
 *   backoff (or after the server's `retry:` hint) and resends `Last-Event-ID`, so missed events
 *   are replayed.
 * - Gives up at once with a `ServiceAuthError` on 401/403 (the 401 says which key is needed), the
 *   typed error of any other 4xx (404: a wrong base URL), and an `invalid_response` error for a
 *   2xx that is not `text/event-stream`; waits `Retry-After` on 429 and 503; retries other 5xx,
 *   network errors and header timeouts, `maxAttempts` times in a row at most.
 * - Ends cleanly when `signal` aborts or the loop breaks.
 */
export async function* subscribeToEvents(
  settings: TransportSettings,
  reconnect: Required<ReconnectOptions>,
  options: SubscribeOptions = {},
): AsyncGenerator<ServiceEvent, void, undefined> {
  const { credential, baseUrl } = requireSettings(settings);
  if (options.lastEventId !== undefined && !isHeaderSafe(options.lastEventId)) {
    // Sent as a header: fetch would refuse it on every attempt, which would pass for a network error.
    throw new ServiceConfigError(
      'invalid_option',
      'lastEventId cannot be sent as Last-Event-ID: only visible ASCII, no spaces or line breaks',
    );
  }
  for (const name of ['onError', 'onReconnect', 'onMissed'] as const) callbackOption(name, options[name]);
  const url = joinUrl(baseUrl, EVENTS_PATH);
  const wanted = kindsOption(options.kinds) ?? CANONICAL;
  const delivered = new RecentIds(REMEMBERED_IDS);
  let lastEventId = options.lastEventId;
  let failures = 0;
  let reconnecting = false;
  const stopped = () => options.signal?.aborted === true;
  /** Counts a failure; throws it when that was the last attempt, else waits and reports it. */
  const retryAfterFailure = async (error: Error, waitMs?: number) => {
    failures++;
    if (failures >= reconnect.maxAttempts) throw error;
    // A server's wait is taken as given, but never under a floor: "come back in 0" from a
    // misbehaving proxy would otherwise be a reconnect storm.
    const delayMs =
      waitMs !== undefined
        ? Math.max(MIN_RETRY_MS, waitMs)
        : backoffDelay(failures, reconnect.baseDelayMs, reconnect.maxDelayMs);
    options.onError?.(error, { attempt: failures, delayMs });
    try {
      await sleep(delayMs, options.signal);
    } catch {
      // Aborted while waiting: the loop condition ends the iteration.
    }
  };

  while (!stopped()) {
    if (reconnecting) options.onReconnect?.({ attempt: failures, lastEventId });
    reconnecting = true;
    const { controller, release } = linkedController(options.signal);
    try {
      let response: Response;
      const headersTimeout = new ServiceConnectionError(
        'timeout',
        `No answer from ${url} within ${reconnect.headersTimeoutMs} ms`,
      );
      const clearTimer = startTimeout(reconnect.headersTimeoutMs, () => controller.abort(headersTimeout));
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
      } catch (error) {
        if (stopped()) return;
        await retryAfterFailure(
          controller.signal.aborted
            ? headersTimeout
            : // Unreachable host, refused connection, or a browser's CORS block: fetch cannot tell.
              new ServiceConnectionError('network_error', `Could not reach ${url}`, { cause: error }),
        );
        continue;
      } finally {
        clearTimer();
      }

      if (!response.ok || !response.body) {
        // The error body is read within the idle timeout: one that stalls after its headers would
        // otherwise hold the subscriber for ever. Its status and headers still make the error.
        const clearBodyTimer = startTimeout(reconnect.idleTimeoutMs, () => controller.abort());
        let body: unknown;
        try {
          body = await readBody(response);
        } finally {
          clearBodyTimer();
        }
        const error = errorFromAnswer(response.status, response.headers, body, url);
        if (error instanceof ServiceAuthError) throw withAppKeyHint(error, EVENTS_PATH);
        if (response.status === 429 || response.status >= 500) {
          await retryAfterFailure(
            error,
            error.retryAfter !== undefined ? error.retryAfter * 1000 : undefined,
          );
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

      // The id this stream starts after: until an event comes, the place to resume from, so a
      // subscriber that has seen none still gets what is made while it reconnects.
      const position = response.headers.get(STREAM_POSITION_HEADER);
      if (position !== null && /^\d{1,19}$/.test(position)) {
        if (lastEventId !== undefined && /^\d{1,19}$/.test(lastEventId)) {
          // A replay that starts past the id sent was cut: the events in between are gone.
          if (BigInt(position) > BigInt(lastEventId)) {
            options.onMissed?.({ after: lastEventId, resumedAfter: position });
          }
          // One that starts before it: the log was restored from a backup, and the ids past its
          // newest will name new events. Those seen before the restore are no reason to drop them.
          if (BigInt(position) < BigInt(lastEventId)) delivered.forgetAfter(BigInt(position));
        }
        lastEventId = position;
      }

      const pending: EventSourceMessage[] = [];
      let serverRetryMs: number | undefined;
      const parser = createParser({
        onEvent: (message) => pending.push(message),
        // A stopping instance says when to come back (to a live one behind the load balancer).
        onRetry: (ms) => {
          serverRetryMs = ms;
        },
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let broke: Error = new ServiceConnectionError('network_error', `The event stream from ${url} ended`);
      try {
        for (;;) {
          const chunk = await readWithin(reader, reconnect.idleTimeoutMs, controller);
          if (chunk.done) break;
          parser.feed(chunk.value);
          while (pending.length > 0) {
            const message = pending.shift()!;
            // A stream that carried a new event block is a good connection: the backoff starts
            // over. A ping alone does not count, nor a block already delivered, or a server that
            // pings (or repeats itself) and hangs up would be hammered for ever.
            if (message.id === undefined || !delivered.has(message.id)) failures = 0;
            const event = accept(message, wanted, delivered);
            if (message.id !== undefined) lastEventId = message.id;
            if (event) {
              delivered.add(event.id);
              yield event;
            }
          }
        }
      } catch (error) {
        // The connection broke or went idle: reconnect below. A break is told as the SDK's own
        // connection error (the runtime's reason as its cause), as a failed connect is.
        broke =
          error instanceof ServiceError
            ? error
            : new ServiceConnectionError('network_error', `The event stream from ${url} broke off`, {
                cause: error,
              });
      } finally {
        reader.cancel().catch(() => {});
      }
      if (stopped()) return;
      await retryAfterFailure(broke, serverRetryMs);
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
  if (!isServiceEvent(data) || data.kind !== kind || delivered.has(data.id)) return null;
  return data;
}

/** One read, or an error after `idleMs` without a byte (the connection is then aborted). */
async function readWithin(
  reader: ReadableStreamDefaultReader<string>,
  idleMs: number,
  controller: AbortController,
): Promise<ReadableStreamReadResult<string>> {
  let clearTimer = () => {};
  const idle = new Promise<never>((_, reject) => {
    clearTimer = startTimeout(idleMs, () => {
      controller.abort();
      reject(new ServiceConnectionError('timeout', `No data on the event stream for ${idleMs} ms`));
    });
  });
  const read = reader.read();
  // When the idle timer wins, the abandoned read rejects later: that is expected, not unhandled.
  read.catch(() => {});
  try {
    return await Promise.race([read, idle]);
  } finally {
    clearTimer();
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
  /** Forgets the ids past `last` (every id that is not a number: none can be compared). */
  forgetAfter(last: bigint): void {
    for (const id of this.#ids) if (!/^\d{1,19}$/.test(id) || BigInt(id) > last) this.#ids.delete(id);
  }
}
