/**
 * Node request -> web `Request`: the full original URL (so the wire sees its base path), every
 * header, the body as a stream, and an abort signal that fires when the client goes away.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { RequestError } from '@hono/node-server';

/** Express's request, as far as the adapter reads it. */
export interface NodeRequestLike extends IncomingMessage {
  originalUrl?: string;
  protocol?: string;
  body?: unknown;
  /** The bytes a body parser read, when the host kept them (`express.json({ verify })`). */
  rawBody?: unknown;
}

/** The body a parser mounted earlier already read: its bytes, and whether they are the originals. */
export interface ParsedBody {
  bytes: Buffer;
  /** False when the bytes are re-serialized from the parsed value (a signature will not match). */
  exact: boolean;
}

/**
 * The body of a request whose stream a body parser already consumed, or undefined when the
 * stream is untouched. The original bytes only survive where the host kept them (`rawBody`, the
 * name `express.json({ verify })` conventionally stores them under) or `express.raw()` left a
 * Buffer; anything else is re-serialized in the format its content type names: a form body
 * (`express.urlencoded()`) as a form, since the door's OAuth routes read only forms, every other
 * value as JSON. Same value, other bytes.
 */
export function parsedBodyOf(req: NodeRequestLike): ParsedBody | undefined {
  if (!req.readableEnded && !(req as { _body?: boolean })._body) return undefined;
  if (Buffer.isBuffer(req.rawBody)) return { bytes: req.rawBody, exact: true };
  const body = req.body;
  if (Buffer.isBuffer(body)) return { bytes: body, exact: true };
  if (body === undefined) return { bytes: Buffer.alloc(0), exact: !(req as { _body?: boolean })._body };
  const text = typeof body === 'string' ? body : isForm(req) ? formOf(body) : JSON.stringify(body);
  return { bytes: Buffer.from(text, 'utf8'), exact: false };
}

function isForm(req: NodeRequestLike): boolean {
  const type = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  return type === 'application/x-www-form-urlencoded';
}

/**
 * A parsed form back to form text. `express.urlencoded()` leaves string values, an array for a
 * repeated name, and (with `extended: true`) nested objects for bracketed names; each goes back
 * as the fields it came from (`a=1&a=2`, `b[c]=3`), so a repeated field is still seen as one.
 */
function formOf(body: unknown): string {
  const form = new URLSearchParams();
  const add = (name: string, value: unknown): void => {
    if (Array.isArray(value)) for (const item of value) add(name, item);
    else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) add(name === '' ? key : `${name}[${key}]`, item);
    } else if (value !== undefined) form.append(name, String(value));
  };
  add('', body);
  return form.toString();
}

/**
 * The request's URL, refused (a `RequestError`, as Hono's listener refuses it) when the Host
 * header is not a host: `a b` does not parse, and `evil.com/x` would move the path.
 */
function urlOf(target: string, base: string, host: string): URL {
  const url = URL.canParse(target, base) ? new URL(target, base) : null;
  if (!url) throw new RequestError('Invalid host header');
  // An absolute-form target names its own host; otherwise the Host header must be one, whole.
  if (target.startsWith('/') && url.hostname !== host.replace(/:\d+$/, '').toLowerCase()) {
    throw new RequestError('Invalid host header');
  }
  return url;
}

/** @throws RequestError when the Host header (or the target) makes no URL. */
export function toWebRequest(req: NodeRequestLike, res: ServerResponse): Request {
  const controller = new AbortController();
  // `close` on the response fires when it is done or when the connection drops first.
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  const protocol = req.protocol ?? ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
  const host = req.headers.host ?? 'localhost';
  const url = urlOf(req.originalUrl ?? req.url ?? '/', `${protocol}://${host}`, host);
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  }
  const method = req.method ?? 'GET';
  const init: RequestInit & { duplex?: 'half' } = { method, headers, signal: controller.signal };
  if (method !== 'GET' && method !== 'HEAD') {
    const parsed = parsedBodyOf(req);
    if (parsed !== undefined) {
      // A body parser mounted before us read the stream; hand over what it left.
      headers.delete('content-length');
      init.body = new Uint8Array(parsed.bytes);
    } else {
      init.body = Readable.toWeb(req) as ReadableStream<Uint8Array>;
      init.duplex = 'half';
    }
  }
  return new Request(url, init);
}
