/**
 * Streaming `multipart/form-data`: hands the one file part of a request to a consumer as it
 * arrives, never holding the body whole. Other fields are small (capped) and skipped; a body past
 * the cap is cut off where the cap is passed and the rest is never read.
 */
import { Readable } from 'node:stream';
import type { ReadableStream as NodeWebStream } from 'node:stream/web';
import busboy from 'busboy';
import { BodyCutShortError } from './body.js';

export interface MultipartFile {
  /** The part's form field name. */
  field: string;
  filename: string;
  mediaType: string;
  /** The file's bytes as they arrive; throws `tooLarge()` once more than `maxBytes` came. */
  body: AsyncIterable<Uint8Array>;
}

export interface MultipartLimits {
  /** Largest file. */
  maxBytes: number;
  tooLarge: () => Error;
  /** Thrown when the body is not multipart, does not parse, or holds no file part named `field`. */
  malformed: (reason: string) => Error;
  /** The field whose file is read (default `file`). */
  field?: string;
}

/** Parts a form may have (fields and files of every name): a file part past them is never read. */
export const MAX_PARTS = 40;

/** Reads the request's first file part named `field` with `consume`, and answers what it does. */
export function readMultipartFile<T>(
  request: Request,
  limits: MultipartLimits,
  consume: (file: MultipartFile) => Promise<T>,
): Promise<T> {
  const field = limits.field ?? 'file';
  const contentType = request.headers.get('content-type') ?? '';
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      // Browsers and curl send a `filename="…"` as raw UTF-8 (busboy's default reads it as Latin-1).
      defParamCharset: 'utf8',
      // No `files` limit: busboy would count a file part in another field against it and drop the
      // one asked for after it. Parts of other fields are skipped unread; `parts` bounds them.
      limits: { fields: 20, fieldSize: 8 * 1024, parts: MAX_PARTS, headerPairs: 20 },
    });
  } catch {
    return Promise.reject(limits.malformed('the body is not multipart/form-data with a boundary'));
  }
  if (!request.body) return Promise.reject(limits.malformed('the body is empty'));
  const source = Readable.fromWeb(request.body as unknown as NodeWebStream<Uint8Array>);

  return new Promise<T>((resolve, reject) => {
    let consuming = false;
    let fileStream: Readable | null = null;
    const fail = (error: Error) => {
      // Stop reading the request: what is left of it is never read.
      source.unpipe(parser);
      source.destroy();
      reject(error);
    };
    parser.on('file', (name, stream, info) => {
      if (consuming || name !== field) {
        stream.resume();
        return;
      }
      consuming = true;
      fileStream = stream;
      consume({
        field: name,
        filename: info.filename ?? '',
        mediaType: info.mimeType,
        body: capped(stream, limits.maxBytes, limits.tooLarge),
      }).then(resolve, (error: Error) => {
        stream.destroy();
        fail(error);
      });
    });
    // Why no file came, said as the sender can act on it: a field of that name without a file (a
    // browser form sent with no file chosen), or a form whose file came after the parts it may have.
    let plainField = false;
    let tooManyParts = false;
    parser.on('field', (name) => {
      if (name === field) plainField = true;
    });
    parser.on('partsLimit', () => {
      tooManyParts = true;
    });
    parser.on('error', (error: Error) => fail(limits.malformed(error.message)));
    parser.on('close', () => {
      if (consuming) return;
      if (tooManyParts)
        fail(
          limits.malformed(
            `the form has more than ${MAX_PARTS} parts; send the file part "${field}" among fewer`,
          ),
        );
      else if (plainField)
        fail(
          limits.malformed(`the part named "${field}" holds no file (it has no filename); send a file in it`),
        );
      else fail(limits.malformed(`no file part named "${field}"`));
    });
    source.on('error', (error) => {
      // A dropped upload: the consumer's read fails too, so it removes what it wrote.
      const cut = new BodyCutShortError({ cause: error });
      fileStream?.destroy(cut);
      parser.destroy(cut);
      reject(cut);
    });
    source.pipe(parser);
  });
}

/** The chunks of a request's body; one that cannot be read (the client went away) throws `BodyCutShortError`. */
export async function* uploadChunks(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    yield* source;
  } catch (error) {
    throw new BodyCutShortError({ cause: error });
  }
}

/** The bytes of `source`, throwing `tooLarge()` as soon as more than `maxBytes` have come. */
export async function* capped(
  source: AsyncIterable<Uint8Array>,
  maxBytes: number,
  tooLarge: () => Error,
): AsyncGenerator<Uint8Array> {
  let total = 0;
  for await (const chunk of source) {
    total += chunk.byteLength;
    if (total > maxBytes) throw tooLarge();
    yield chunk;
  }
}
