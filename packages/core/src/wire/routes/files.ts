/**
 * Files: `POST /files` (multipart, or the raw bytes), `GET /files`, `GET /files/:id`,
 * `GET /files/:id/content` (the bytes, with safe download headers) and `DELETE /files/:id`.
 * Uploads stream into blob storage as they arrive; a file past `files.maxBytes` is refused
 * with 413 and the rest of its body is never read.
 *
 * @see docs/wire.md "Files"
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { FileStore, FileSummary } from '../../agent/files.js';
import { isIdOf } from '../../agent/ids.js';
import { rangeOf } from '../../http/byte-range.js';
import { contentDisposition } from '../../http/content-disposition.js';
import { capped, readMultipartFile, uploadChunks } from '../../http/multipart.js';
import { wholeNumber } from '../../http/whole-number.js';
import type { WireContext, WireCtx, WireEnv } from '../context.js';
import { WireError } from '../errors.js';
import { RAW_UPLOAD_HEADER } from '../pipeline.js';
import { noFields, pageCursor, principalOf, queryOf, validate } from '../request.js';

/** Header naming a raw upload's file (percent-encoded UTF-8). */
export const FILE_NAME_HEADER = 'x-service-file-name';
/** Room for a multipart body's boundaries and part headers around the file itself. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/** Types a browser may show in place: none of them runs script. Everything else downloads. */
const INLINE_TYPES = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'text/plain',
  'audio/mpeg',
  'audio/ogg',
  'audio/wav',
  'video/mp4',
  'video/webm',
]);

const listQuery = z.object({
  limit: wholeNumber(1, 100).default(50),
  before: pageCursor((id) => isIdOf('fil', id), 'nextBefore').optional(),
});

export function fileRoutes(ctx: WireContext, files: FileStore, maxBytes: number): Hono<WireEnv> {
  const app = new Hono<WireEnv>();
  const tooLarge = () =>
    new WireError('payload_too_large', `The file is larger than ${maxBytes} bytes, the upload limit.`);

  app.post('/files', async (c) => {
    const principal = await principalOf(ctx, c);
    const mode = c.req.header(RAW_UPLOAD_HEADER)?.toLowerCase();
    const declared = Number(c.req.header('content-length') ?? '0');
    let file: FileSummary;
    if (mode === 'multipart') {
      if (declared > maxBytes + MULTIPART_OVERHEAD_BYTES) throw tooLarge();
      file = await readMultipartFile(
        c.req.raw,
        {
          maxBytes,
          tooLarge,
          malformed: (reason) => new WireError('validation_failed', `body: ${reason}.`),
        },
        (part) =>
          files.create(principal.subject, {
            name: part.filename,
            mediaType: part.mediaType,
            body: part.body,
          }),
      );
    } else if (mode === 'raw') {
      if (declared > maxBytes) throw tooLarge();
      const body = c.req.raw.body;
      file = await files.create(principal.subject, {
        name: fileNameHeader(c),
        mediaType: c.req.header('content-type') ?? '',
        body: capped(body ? uploadChunks(chunksOf(body)) : emptyBody(), maxBytes, tooLarge),
      });
    } else {
      // A JSON body passes the gate without the header; the body's shape is still unsaid.
      throw new WireError(
        'validation_failed',
        'headers.x-service-upload: an upload says how its body is shaped: X-Service-Upload: raw (the body is the file) or multipart (the file in field "file").',
      );
    }
    ctx.audit.record(principal.subject, 'file.uploaded', { fileId: file.id, size: file.size });
    return c.json({ file }, 201);
  });

  app.get('/files', async (c) => {
    const principal = await principalOf(ctx, c);
    const query = validate(listQuery, queryOf(c), 'query');
    const page = await files.list(principal.subject, {
      limit: query.limit,
      ...(query.before ? { before: query.before } : {}),
    });
    return c.json({ files: page.items, nextBefore: page.nextCursor });
  });

  app.get('/files/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    const file = await files.get(principal.subject, c.req.param('id'));
    if (!file) throw new WireError('not_found', 'No such file.');
    return c.json({ file });
  });

  app.get('/files/:id/content', async (c) => {
    const principal = await principalOf(ctx, c);
    const found = await files.get(principal.subject, c.req.param('id'));
    if (!found) throw new WireError('not_found', 'No such file.');
    // A file's bytes never change, so its id is a strong validator: a resumed download whose
    // `If-Range` names it gets the rest; one naming anything else gets the whole file again.
    const etag = `"${found.id}"`;
    const ifRange = c.req.header('if-range');
    const wanted =
      ifRange === undefined || ifRange === etag ? rangeOf(c.req.header('range'), found.size) : null;
    if (wanted && 'unsatisfiable' in wanted)
      throw new WireError(
        'range_not_satisfiable',
        `The file has ${found.size} bytes; the range asked for lies past them.`,
        {
          headers: { 'content-range': `bytes */${found.size}` },
        },
      );
    const range = wanted && 'range' in wanted ? wanted.range : undefined;
    const file = await files.open(principal.subject, found.id, range);
    if (!file) throw new WireError('not_found', 'No such file.');
    const inline = INLINE_TYPES.has(file.mediaType) && c.req.query('download') === undefined;
    return new Response(file.body, {
      status: range ? 206 : 200,
      headers: {
        'content-type': file.mediaType === 'text/plain' ? 'text/plain; charset=utf-8' : file.mediaType,
        'content-length': String(range ? range.end - range.start + 1 : file.size),
        ...(range ? { 'content-range': `bytes ${range.start}-${range.end}/${file.size}` } : {}),
        'accept-ranges': 'bytes',
        etag,
        'content-disposition': contentDisposition(inline ? 'inline' : 'attachment', file.name),
        'x-content-type-options': 'nosniff',
        // A file opened in place is a document of the host's origin: it may run nothing.
        'content-security-policy': "default-src 'none'; img-src 'self'; media-src 'self'; sandbox",
        'cache-control': 'private, no-store',
      },
    });
  });

  app.delete('/files/:id', async (c) => {
    const principal = await principalOf(ctx, c);
    await noFields(c);
    const id = c.req.param('id');
    if (!(await files.delete(principal.subject, id))) throw new WireError('not_found', 'No such file.');
    ctx.audit.record(principal.subject, 'file.deleted', { fileId: id });
    return c.json({ deleted: true, id });
  });

  return app;
}

function fileNameHeader(c: WireCtx): string {
  const raw = c.req.header(FILE_NAME_HEADER);
  if (!raw) return 'file';
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new WireError('validation_failed', `header ${FILE_NAME_HEADER}: malformed percent-encoding.`);
  }
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}

/** A web stream's chunks; leaving early (a throw past the cap) cancels the stream unread. */
async function* chunksOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
