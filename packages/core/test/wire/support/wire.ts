/**
 * Black-box helpers for the wire suites: a service with a sign-in stand-in (the `x-test-user`
 * header names the user), requests, and turn streams read with the AI SDK's own parsers.
 */
import {
  parseJsonEventStream,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
  uiMessageChunkSchema,
} from 'ai';
import { silentLogger } from '../../../src/http/logger.js';
import type { Store } from '../../../src/store/index.js';
import { createService, type Service } from '../../../src/wire/create-service.js';
import type { ServiceOptions } from '../../../src/wire/options.js';

export const ORIGIN = 'http://host.test';

/** A stand-in for the host's sign-in: `x-test-user: <subject>` (and `x-test-kind`). */
export function headerPrincipal(request: Request) {
  const subject = request.headers.get('x-test-user');
  if (!subject) return null;
  const kind = request.headers.get('x-test-kind');
  return { subject, ...(kind ? { kind } : {}), email: `${subject}@example.test` };
}

export async function testService(store: Store, options: Partial<ServiceOptions> = {}): Promise<Service> {
  return createService({
    store,
    principal: headerPrincipal,
    logger: silentLogger,
    env: {},
    development: false,
    overrides: false,
    ...options,
  });
}

/** A logger that keeps what the service warns or errors about, to check nothing was said. */
export function collectingLogger(): { logger: NonNullable<ServiceOptions['logger']>; said: string[] } {
  const said: string[] = [];
  return {
    said,
    logger: {
      info() {},
      error: (message: string) => said.push(message),
      warn: (message: string) => said.push(message),
    },
  };
}

export type Caller = (path: string, init?: RequestInit & { json?: unknown }) => Promise<Response>;

/** Requests as `user` against `fetch` (a service's handler, or the real network on a base URL). */
export function callerFor(
  fetcher: (request: Request) => Promise<Response>,
  user: string | null,
  base = ORIGIN,
): Caller {
  return (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (user) headers.set('x-test-user', user);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    const { json: _json, ...rest } = init;
    return fetcher(new Request(`${base}/api/service${path}`, { ...rest, headers, body: body ?? null }));
  };
}

export interface ReadTurn {
  chunks: UIMessageChunk[];
  /** SSE ids of the data frames, in order. */
  ids: number[];
  message: UIMessage | undefined;
}

/** Reads a whole turn stream with the AI SDK's parser and assembles the message as useChat would. */
export async function readTurn(response: Response): Promise<ReadTurn> {
  if (!response.body) throw new Error(`no body (status ${response.status})`);
  const [forParse, forIds] = response.body.tee();
  const idsPromise = new Response(forIds)
    .text()
    .then((text) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])));
  const chunks: UIMessageChunk[] = [];
  const parsed = parseJsonEventStream({ stream: forParse, schema: uiMessageChunkSchema });
  const reader = parsed.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!value.success) throw value.error;
    chunks.push(value.value);
  }
  return { chunks, ids: await idsPromise, message: await assemble(chunks) };
}

export async function assemble(chunks: UIMessageChunk[]): Promise<UIMessage | undefined> {
  let message: UIMessage | undefined;
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      // A copy of each data chunk: the SDK repaints a data part in place, which would rewrite it.
      for (const chunk of chunks) controller.enqueue(chunk.type.startsWith('data-') ? { ...chunk } : chunk);
      controller.close();
    },
  });
  for await (const m of readUIMessageStream({ stream })) message = m;
  return message;
}

export function textOf(message: UIMessage | undefined): string {
  return (message?.parts ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');
}

/** Polls `check` until it returns a value other than undefined (at most `ms`). */
export async function eventually<T>(check: () => Promise<T | undefined>, ms = 5000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export interface Frame {
  id: number;
  chunk: UIMessageChunk;
}

/**
 * Reads a turn stream frame by frame (to act mid-turn, or to drop the connection on purpose).
 * Data frames are validated against the AI SDK's chunk schema.
 */
export class TurnReader {
  readonly frames: Frame[] = [];
  done = false;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #buffer = '';

  constructor(response: Response) {
    if (!response.body) throw new Error(`no body (status ${response.status})`);
    this.#reader = response.body.getReader();
  }

  /** Reads until `predicate` holds for a frame (returns it) or the stream ends (throws). */
  async until(predicate: (frame: Frame) => boolean): Promise<Frame> {
    const seen = this.frames.find(predicate);
    if (seen) return seen;
    for (;;) {
      const frame = await this.next();
      if (!frame) throw new Error('stream ended before the expected frame');
      if (predicate(frame)) return frame;
    }
  }

  async rest(): Promise<Frame[]> {
    while (await this.next()) {}
    return this.frames;
  }

  /** Drops the connection, as a closed tab would. */
  async drop(): Promise<void> {
    await this.#reader.cancel();
  }

  async next(): Promise<Frame | null> {
    for (;;) {
      const end = this.#buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 2);
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (data === undefined) continue; // a keepalive comment
        if (data === '[DONE]') {
          this.done = true;
          return null;
        }
        const id = Number(/^id: (\d+)$/m.exec(block)?.[1]);
        const parsed = await uiMessageChunkSchema().validate!(JSON.parse(data));
        if (!parsed.success) throw parsed.error;
        const frame = { id, chunk: parsed.value };
        this.frames.push(frame);
        return frame;
      }
      const { done, value } = await this.#reader.read();
      if (done) return null;
      this.#buffer += this.#decoder.decode(value, { stream: true });
    }
  }
}

export interface Paused {
  /** Every frame up to and including the pause marker. */
  frames: Frame[];
  /** The marker's own sequence number: resume after it. */
  resumeAfter: number;
  /** The approvals requested on the way, in order. */
  approvalIds: string[];
}

/**
 * Reads a turn stream to its end, which must be the run's pause marker: the run waits for a
 * decision, and every reader's stream ends there (the AI SDK client then sends its answers).
 */
export async function readUntilPaused(reader: TurnReader): Promise<Paused> {
  const frames = await reader.rest();
  const last = frames.at(-1);
  const metadata =
    last?.chunk.type === 'message-metadata'
      ? (last.chunk.messageMetadata as { status?: string; resumeAfter?: number })
      : undefined;
  if (!last || !reader.done || metadata?.status !== 'awaiting_approval' || metadata.resumeAfter !== last.id) {
    throw new Error(`the stream did not end at a pause marker: ${JSON.stringify(last)}`);
  }
  const approvalIds = frames.flatMap((f) =>
    f.chunk.type === 'tool-approval-request' ? [f.chunk.approvalId] : [],
  );
  return { frames, resumeAfter: last.id, approvalIds };
}

/** The rest of the thread's run after `after` (a resume with `?after=`), read to its end. */
export async function resumeAfter(call: Caller, threadId: string, after: number): Promise<Frame[]> {
  const response = await call(`/threads/${threadId}/stream?after=${after}`);
  if (response.status !== 200) throw new Error(`resume answered ${response.status}`);
  return new TurnReader(response).rest();
}
