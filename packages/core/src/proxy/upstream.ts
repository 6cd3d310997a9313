import { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Agent, type Dispatcher, util } from 'undici';

/**
 * How the proxy reaches a provider's upstream. The default keeps a pool of keep-alive
 * connections per upstream origin (undici), one request at a time on each: no pipelining, as a
 * non-idempotent call that failed behind another could not be told apart from one the upstream
 * already ran. Given a `fetch` (tests, the demo's in-process stand-in), calls go through it.
 *
 * @see docs/proxy.md "Forwarding"
 */
export interface UpstreamClient {
  send(request: UpstreamRequest): Promise<UpstreamAnswer>;
  /** Closes pooled connections: idle ones now, busy ones once their answer is done. */
  close(): void;
}

export interface UpstreamRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | AsyncIterable<Uint8Array> | null;
  /** Aborted when the caller goes away: the upstream call stops with it. */
  signal: CallerSignal;
}

/**
 * What the upstream call hears the caller's going away by. An `AbortSignal` is one; the Node
 * listener passes a lighter one of its own (an `AbortController` with a listener cost 5 µs of
 * the thread a call).
 */
export interface CallerSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export interface UpstreamAnswer {
  status: number;
  /** Lower-case names; values of a repeated header joined with `, ` (`set-cookie` left out). */
  headers: Record<string, string>;
  /** The body, decoded of any content encoding; null when there is none. */
  body: ChunkSource | null;
  /** True when a content encoding was decoded: the caller gets the decoded bytes. */
  decoded: boolean;
}

/** A response body read chunk by chunk, only as fast as it is asked for. */
export interface ChunkSource {
  /** The next chunk, or null at the end; rejects when the upstream broke off. */
  next(): Promise<Uint8Array | null>;
  /** Stops reading: a pending `next()` settles, and the upstream connection is let go. */
  cancel(reason?: unknown): void;
  /** True once the upstream has ended well and every chunk has been taken (absent: cannot tell). */
  exhausted?(): boolean;
}

/** Keep-alive pools per upstream origin, one request at a time per connection. */
export function pooledUpstream(): UpstreamClient {
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: 256, pipelining: 1 });
  return {
    async send(request) {
      // The URL is the provider's upstream and the path as sent: split, not parsed again.
      const pathStart = request.url.indexOf('/', request.url.indexOf('//') + 2);
      const body = request.body;
      const answer = await dispatchCall(
        agent,
        {
          origin: pathStart < 0 ? request.url : request.url.slice(0, pathStart),
          path: pathStart < 0 ? '/' : request.url.slice(pathStart),
          method: request.method as Dispatcher.HttpMethod,
          headers: request.headers,
          body: body === null || typeof body === 'string' ? body : Readable.from(body, { objectMode: false }),
        },
        request.signal,
        (status) => request.method === 'HEAD' || NO_BODY_STATUSES.has(status),
      );
      if (answer.body === null)
        return { status: answer.status, headers: answer.headers, body: null, decoded: false };
      const encoding = answer.headers['content-encoding'];
      const decoder = encoding ? decoderFor(encoding) : null;
      if (!decoder)
        return { status: answer.status, headers: answer.headers, body: answer.body, decoded: false };
      const encoded = readableOf(answer.body);
      encoded.on('error', (error: Error) => decoder.destroy(error));
      return {
        status: answer.status,
        headers: answer.headers,
        body: readableSource(encoded.pipe(decoder), encoded),
        decoded: true,
      };
    },
    close: () => {
      agent.close().catch(() => {});
    },
  };
}

/**
 * One call through the pool with a handler of our own: the answer's chunks go to `next()` as they
 * arrive, and the connection pauses while 64 KiB wait to be asked for. (undici's `request`
 * wraps the same in a Node stream read through an async iterator, which every call paid for.)
 * Resolves once the final status and headers are in; rejects when the call fails before them.
 */
function dispatchCall(
  agent: Agent,
  options: Dispatcher.DispatchOptions,
  signal: CallerSignal,
  bodiless: (status: number) => boolean,
): Promise<{ status: number; headers: Record<string, string>; body: ChunkSource | null }> {
  return new Promise((resolve, reject) => {
    const waiting: Buffer[] = [];
    let waitingBytes = 0;
    let answered = false;
    let ended = false;
    let failure: Error | null = null;
    let discard = false;
    let reader: { resolve(chunk: Uint8Array | null): void; reject(error: unknown): void } | null = null;
    let resume: (() => void) | null = null;
    let paused = false;
    let abort: ((error?: Error) => void) | null = null;
    const aborted = () => abort?.(reasonOf(signal.reason));
    const end = (error: Error | null) => {
      if (ended) return;
      ended = true;
      failure = error;
      signal.removeEventListener('abort', aborted);
      if (!answered) {
        reject(error ?? new Error('The upstream closed without answering'));
        return;
      }
      const pending = reader;
      reader = null;
      if (!pending) return;
      if (error) pending.reject(error);
      else pending.resolve(null);
    };
    const unpause = () => {
      if (!paused) return;
      paused = false;
      resume?.();
    };
    const body: ChunkSource = {
      next() {
        const chunk = waiting.shift();
        if (chunk) {
          waitingBytes -= chunk.byteLength;
          if (waitingBytes < WAITING_BYTES) unpause();
          return Promise.resolve(chunk);
        }
        if (ended) return failure ? Promise.reject(failure) : Promise.resolve(null);
        return new Promise((resolveChunk, rejectChunk) => {
          reader = { resolve: resolveChunk, reject: rejectChunk };
          unpause();
        });
      },
      exhausted: () => ended && failure === null && waiting.length === 0,
      cancel(reason) {
        discard = true;
        waiting.length = 0;
        waitingBytes = 0;
        const pending = reader;
        reader = null;
        pending?.resolve(null);
        unpause();
        if (!ended) abort?.(reasonOf(reason));
      },
    };
    signal.addEventListener('abort', aborted, { once: true });
    const handler: Dispatcher.DispatchHandlers = {
      onConnect(abortCall) {
        abort = abortCall;
        if (signal.aborted) aborted();
      },
      onHeaders(status, rawHeaders, resumeCall) {
        // An informational answer (1xx) is followed by the final one.
        if (status < 200) return true;
        answered = true;
        resume = resumeCall;
        discard = bodiless(status);
        const headers = plainHeaders(util.parseHeaders(rawHeaders));
        resolve({ status, headers, body: discard ? null : body });
        return true;
      },
      onData(chunk) {
        // A resumed parser flushes with an empty chunk: queued, it would pause the connection
        // again at once, and the reader would be handed empty chunks for ever.
        if (discard || chunk.byteLength === 0) return true;
        if (reader) {
          const pending = reader;
          reader = null;
          pending.resolve(chunk);
          return true;
        }
        waiting.push(chunk);
        waitingBytes += chunk.byteLength;
        if (waitingBytes < WAITING_BYTES) return true;
        paused = true;
        return false;
      },
      onComplete() {
        end(null);
      },
      onError(error) {
        end(error);
      },
    };
    try {
      agent.dispatch(options, handler);
    } catch (error) {
      end(reasonOf(error));
    }
  });
}

/** Bytes of an answer held for the caller before the upstream connection pauses (a Node stream holds as much). */
const WAITING_BYTES = 64 * 1024;

function reasonOf(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error('The call was cancelled');
}

/** A chunk source as a Node stream (for a decoder to pipe); destroying it cancels the source. */
function readableOf(source: ChunkSource): Readable {
  return new Readable({
    read() {
      source.next().then(
        (chunk) => this.push(chunk),
        (error: Error) => this.destroy(error),
      );
    },
    destroy(error, callback) {
      source.cancel(error ?? undefined);
      callback(error);
    },
  });
}

/** Calls through a `fetch` (which decodes content encodings itself). */
export function fetchUpstream(fetchImpl: typeof fetch): UpstreamClient {
  return {
    async send(request) {
      const body = request.body;
      const response = await fetchImpl(request.url, {
        method: request.method,
        headers: request.headers,
        body: body === null || typeof body === 'string' ? body : streamOf(body),
        redirect: 'manual',
        signal: abortSignalOf(request.signal),
        // biome-ignore lint/suspicious/noExplicitAny: `duplex` is required by Node for streamed bodies but missing from RequestInit
        ...({ duplex: 'half' } as any),
      });
      const headers: Record<string, string> = {};
      for (const [name, value] of response.headers) if (name !== 'set-cookie') headers[name] = value;
      return {
        status: response.status,
        headers,
        body: response.body ? streamSource(response.body) : null,
        decoded: response.headers.has('content-encoding'),
      };
    },
    close: () => {},
  };
}

/** The caller's signal as an `AbortSignal`, which `fetch` takes. */
function abortSignalOf(signal: CallerSignal): AbortSignal {
  if (signal instanceof AbortSignal) return signal;
  const controller = new AbortController();
  if (signal.aborted) controller.abort(signal.reason);
  else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  return controller.signal;
}

/** Chunks as a WHATWG stream, read as it is pulled. */
function streamOf(chunks: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel(reason) {
      await iterator.return?.(reason);
    },
  });
}

/** A WHATWG stream as a chunk source. */
export function streamSource(stream: ReadableStream<Uint8Array>): ChunkSource {
  const reader = stream.getReader();
  return {
    async next() {
      const { done, value } = await reader.read();
      return done ? null : value;
    },
    cancel(reason) {
      void reader.cancel(reason).catch(() => {});
    },
  };
}

/** A Node stream as a chunk source; cancelling destroys `owner` (the upstream body) too. */
function readableSource(body: Readable, owner: Readable): ChunkSource {
  const chunks = body[Symbol.asyncIterator]();
  return {
    async next() {
      const { done, value } = await chunks.next();
      return done ? null : (value as Uint8Array);
    },
    cancel(reason) {
      owner.destroy(reason instanceof Error ? reason : undefined);
      body.destroy();
    },
  };
}

/** Statuses whose answer has no body (a `Response` refuses one); what an upstream sends with one is dropped. */
const NO_BODY_STATUSES = new Set([101, 204, 205, 304]);

function plainHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name in raw) {
    const value = raw[name];
    if (value === undefined || name === 'set-cookie') continue;
    headers[name] = typeof value === 'string' ? value : value.join(', ');
  }
  return headers;
}

/** The decoder of a content encoding the caller would otherwise get encoded; null for identity. */
function decoderFor(encoding: string) {
  switch (encoding.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return null;
  }
}
