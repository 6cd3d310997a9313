import { BodyCutShortError, BodyTooLargeError, readChunks } from '../http/body.js';
import type { ProviderConfig } from './providers.js';
import type { CallerSignal } from './upstream.js';

/**
 * The caller's request as the proxy forwards it: where it goes upstream, and its body. Token-metered
 * providers get JSON bodies read whole (small, and the model decides the price); a streamed chat
 * completion is asked to report its usage in its last event. Other bodies stream through as they
 * come, cut off past the size limit.
 *
 * @see docs/proxy.md "Forwarding"
 */
export interface ForwardedRequest {
  /** Upper-case method. */
  method: string;
  /** Everything after `/proxy/{provider}`, as sent. */
  subPath: string;
  upstreamUrl: string;
  body: string | AsyncIterable<Uint8Array> | null;
  /** The `model` of a JSON body, which picks the rates; null without one. */
  model: string | null;
  /**
   * The most output tokens the request allows: its `max_tokens` (or `max_completion_tokens`,
   * `max_output_tokens`) times its `n` choices; null when it sets no bound. Admission holds by it.
   */
  maxOutputTokens: number | null;
  /** Size of the body in bytes (declared, for bodies streamed through): the input estimate. */
  inputBytes: number;
  /** Set once a body streamed through passed the size limit (its upload was cut off). */
  overLimit: boolean;
}

/**
 * Bodies of these types stream through unread (uploads: audio, images, files); any other body of
 * a token-metered provider is read as the JSON it most likely is, whatever its type says (`fetch`
 * labels a string body `text/plain`), so its model is priced.
 */
const STREAMED_TYPES = /^\s*(multipart\/|application\/octet-stream|audio\/|image\/|video\/)/i;

/**
 * A call to `/proxy/{provider}/...` as either surface hands it to the proxy (the Hono routes from
 * a `Request`, the Node listener from an `IncomingMessage`): plain values and accessors, so the
 * metered path is one and the same whichever way the call came in.
 */
export interface IncomingCall {
  /** Upper-case method. */
  method: string;
  /** The provider segment of the path, decoded. */
  provider: string;
  /** Everything after `/proxy/{provider}`, as sent (at least `/`). */
  subPath: string;
  /** The query string with its `?`, or empty. */
  search: string;
  /** A request header by lower-case name. */
  header(name: string): string | null;
  /** Every request header, lower-case names. */
  headers(): Iterable<[string, string]>;
  /** The body's chunks; null when the request has none. */
  body(): AsyncIterable<Uint8Array> | null;
  /** The caller's address, with this many trusted proxies in front (see `clientIp`). */
  clientAddress(trustedProxies: number): string;
  /** Aborted when the caller goes away. */
  signal: CallerSignal;
  requestId: string | null;
}

/** The path after `/proxy/{provider}`: `/proxy/llm/v1/x` gives `/v1/x`, `/proxy/llm` gives `/`. */
export function subPathOf(pathname: string): string {
  const afterPrefix = pathname.indexOf('/', 1);
  const afterProvider = afterPrefix < 0 ? -1 : pathname.indexOf('/', afterPrefix + 1);
  return afterProvider < 0 ? '/' : pathname.slice(afterProvider);
}

/** The request to forward, or null when its body is larger than `maxBytes`. */
export async function readRequest(
  call: IncomingCall,
  provider: ProviderConfig,
  maxBytes: number,
): Promise<ForwardedRequest | null> {
  const forwarded: ForwardedRequest = {
    method: call.method,
    subPath: call.subPath,
    upstreamUrl: `${provider.upstreamUrl}${call.subPath}${call.search}`,
    body: null,
    model: null,
    maxOutputTokens: null,
    inputBytes: 0,
    overLimit: false,
  };
  const body = call.body();
  if (!body) return forwarded;
  const declared = Number(call.header('content-length') ?? '0');
  if (declared > maxBytes) return null;
  forwarded.inputBytes = Number.isSafeInteger(declared) && declared > 0 ? declared : 0;
  // Uploads go through as sent, unread: their model is not known, which prices them at the
  // provider's highest rate.
  if (provider.dialect === 'per_call' || STREAMED_TYPES.test(call.header('content-type') ?? '')) {
    forwarded.body = limited(body, maxBytes, forwarded);
    return forwarded;
  }
  // Any other body is read to be metered; one the proxy cannot read (compressed, or not UTF-8)
  // could still be read by the upstream, a streamed completion then going unmetered for output.
  const encoding = call.header('content-encoding');
  if (encoding !== null && encoding.trim().toLowerCase() !== 'identity') {
    throw new UnreadableBodyError('the request body must be sent uncompressed (no Content-Encoding)');
  }
  let bytes: Uint8Array;
  try {
    bytes = await readChunks(body, { maxBytes });
  } catch (error) {
    if (error instanceof BodyTooLargeError) return null;
    throw new BodyCutShortError({ cause: error });
  }
  forwarded.inputBytes = bytes.byteLength;
  const text = exactText(bytes);
  if (text === null) throw new UnreadableBodyError('the request body must be UTF-8 text');
  forwarded.body = text;
  // A byte order mark before the JSON is kept in what is forwarded (the upstream may take it),
  // and read past here.
  const fields = jsonObject(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  if (!fields) return forwarded;
  // An empty model names none: priced as one not known.
  forwarded.model = typeof fields.model === 'string' && fields.model !== '' ? fields.model : null;
  forwarded.maxOutputTokens = outputBound(fields);
  if (provider.dialect === 'openai' && streamsUsage(fields.stream) && isChatCompletions(call.subPath)) {
    const streamOptions = (fields.stream_options ?? {}) as Record<string, unknown>;
    if (fields.stream_options === undefined) {
      // Spliced in, not serialized again: a long conversation's body is not written twice. The
      // object has `stream` in it, so a member follows the one added.
      const open = text.indexOf('{') + 1;
      forwarded.body = `${text.slice(0, open)}"stream_options":{"include_usage":true},${text.slice(open)}`;
    } else if (streamOptions.include_usage !== true) {
      forwarded.body = JSON.stringify({
        ...fields,
        stream_options: { ...streamOptions, include_usage: true },
      });
    }
  }
  return forwarded;
}

/**
 * Whether the upstream will stream: any `stream` its JSON reading takes as true, not only `true`
 * (a Python upstream streams for `"true"` or `1`). The proxy asks for usage whenever it might:
 * a stream without it would be billed only its estimate, however long its answer.
 */
function streamsUsage(stream: unknown): boolean {
  return stream !== undefined && stream !== null && stream !== false && stream !== 0 && stream !== '';
}

/**
 * Whether the path is a chat completion's as the upstream (or a server in front of it) may read
 * it: decoded, repeated slashes merged, a trailing `/` aside.
 */
function isChatCompletions(subPath: string): boolean {
  let path = subPath;
  try {
    path = decodeURIComponent(subPath);
  } catch {}
  return /\/chat\/+completions\/*$/.test(path);
}

const OUTPUT_BOUNDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;

/** The request's bound on its output tokens across all its choices; null when it sets none. */
function outputBound(fields: Record<string, unknown>): number | null {
  const bounds = OUTPUT_BOUNDS.map((name) => fields[name]).filter(isCount);
  if (bounds.length === 0) return null;
  const choices = isCount(fields.n) ? fields.n : 1;
  const bound = Math.max(...bounds) * choices;
  return Number.isSafeInteger(bound) ? bound : null;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

/** A token-metered call's body the proxy cannot read to meter it: refused (415), never forwarded. */
export class UnreadableBodyError extends Error {}

/** The body as text when it is UTF-8 without a NUL, which encodes back to the same bytes (a BOM kept); else null. */
function exactText(bytes: Uint8Array): string | null {
  // UTF-16 and UTF-32 JSON, which an upstream may detect and read, hold NUL bytes; UTF-8 JSON
  // never does (a NUL in a string is escaped).
  if (bytes.includes(0)) return null;
  try {
    return EXACT_UTF8.decode(bytes);
  } catch {
    return null;
  }
}
const EXACT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function jsonObject(text: string): Record<string, unknown> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : null;
}

/**
 * Passes a body through, cutting it off past `maxBytes` (the upstream sees a failed upload, the
 * caller a 413: `overLimit` tells the two apart from an upstream that failed).
 */
async function* limited(
  body: AsyncIterable<Uint8Array>,
  maxBytes: number,
  request: ForwardedRequest,
): AsyncIterable<Uint8Array> {
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      request.overLimit = true;
      throw new BodyTooLargeError(maxBytes);
    }
    yield chunk;
  }
}
