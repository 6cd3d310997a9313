/**
 * Reading request bodies under a size cap. A declared `Content-Length` past the cap is refused
 * unread; a body without one (or lying about it) is read chunk by chunk and the stream is
 * cancelled as soon as the cap is passed, so no more than the cap is ever held in memory.
 */

/** Thrown when a body is larger than the cap (unless the caller names its own error). */
export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError';
  constructor(readonly maxBytes: number) {
    super(`The request body is larger than ${maxBytes} bytes.`);
  }
}

/**
 * The caller's body ended before it was complete: the caller went away mid-upload. Not the
 * store's failure, though the socket's error it carries (`ECONNRESET`) reads like one.
 */
export class BodyCutShortError extends Error {
  override name = 'BodyCutShortError';
  constructor(options?: ErrorOptions) {
    super('The request body ended before it was complete', options);
  }
}

/**
 * Thrown for a body read as text that is not UTF-8. Decoded leniently, its bad bytes would become
 * U+FFFD and be kept: what the caller sent, silently changed.
 */
export class BodyNotUtf8Error extends Error {
  override name = 'BodyNotUtf8Error';
  constructor() {
    super('The request body is not valid UTF-8.');
  }
}

export interface BodyLimit {
  maxBytes: number;
  /** The error to throw for a body past the cap, in the caller's own terms. */
  tooLarge?: () => Error;
  /** The error to throw for a body that is not UTF-8 (read as text), in the caller's own terms. */
  notUtf8?: () => Error;
}

/** A request, or a response the server fetched: whatever has headers and a body stream. */
type WithBody = Pick<Request, 'headers' | 'body'>;

/**
 * The body's bytes (empty when there is none), at most `maxBytes` of them. A body its client broke
 * off throws `BodyCutShortError`.
 */
export async function readBody(request: WithBody, limit: BodyLimit): Promise<Uint8Array<ArrayBuffer>> {
  const refuse = () => limit.tooLarge?.() ?? new BodyTooLargeError(limit.maxBytes);
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > limit.maxBytes) throw refuse();
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let read: ReadableStreamReadResult<Uint8Array>;
    try {
      read = await reader.read();
    } catch (error) {
      // The client went away before its body's end: not a fault of the server, nor of its store.
      throw new BodyCutShortError({ cause: error });
    }
    const { done, value } = read;
    if (done) break;
    size += value.byteLength;
    if (size > limit.maxBytes) {
      await reader.cancel().catch(() => {});
      throw refuse();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body as UTF-8 text, decoded as `Request.text()` does (a leading BOM is dropped), except
 * that bytes that are not UTF-8 are refused rather than replaced.
 */
export async function readBodyText(request: WithBody, limit: BodyLimit): Promise<string> {
  const bytes = await readBody(request, limit);
  try {
    return UTF8.decode(bytes);
  } catch {
    throw limit.notUtf8?.() ?? new BodyNotUtf8Error();
  }
}

/**
 * The bytes of chunks (a request body as an async iterable), at most `maxBytes` of them: past the
 * cap reading stops (the iterable is returned early) and the error is thrown.
 */
export async function readChunks(chunks: AsyncIterable<Uint8Array>, limit: BodyLimit): Promise<Uint8Array> {
  const held: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.byteLength;
    if (size > limit.maxBytes) throw limit.tooLarge?.() ?? new BodyTooLargeError(limit.maxBytes);
    held.push(chunk);
  }
  return held.length === 1 ? held[0]! : Buffer.concat(held, size);
}

export type FormFields = Record<string, FormDataEntryValue>;

/**
 * The fields of an `application/x-www-form-urlencoded` or `multipart/form-data` body, the last
 * value of a repeated name winning. Another content type, or a body that does not parse as its
 * type says, gives no fields: a form handler then refuses the missing fields as it would any.
 */
export async function readFormFields(request: WithBody, limit: BodyLimit): Promise<FormFields> {
  // Read first: an oversized body is refused whatever its type says.
  const bytes = await readBody(request, limit);
  const type = request.headers.get('content-type') ?? '';
  const mediaType = type.split(';')[0]!.trim().toLowerCase();
  if (mediaType !== 'application/x-www-form-urlencoded' && mediaType !== 'multipart/form-data') return {};
  try {
    const form = await new Response(bytes, {
      headers: { 'content-type': type.replace(/^[^;]+/, (media) => media.toLowerCase()) },
    }).formData();
    return Object.fromEntries(form);
  } catch {
    return {};
  }
}
