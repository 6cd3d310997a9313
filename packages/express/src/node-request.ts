/**
 * Node request -> web `Request`: the full original URL (so the wire sees its base path), every
 * header, the body as a stream, and an abort signal that fires when the client goes away.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';

/** Express's request, as far as the adapter reads it. */
export interface NodeRequestLike extends IncomingMessage {
  originalUrl?: string;
  protocol?: string;
  body?: unknown;
}

export function toWebRequest(req: NodeRequestLike, res: ServerResponse): Request {
  const controller = new AbortController();
  // `close` on the response fires when it is done or when the connection drops first.
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  const protocol = req.protocol ?? ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
  const host = req.headers.host ?? 'localhost';
  const url = new URL(req.originalUrl ?? req.url ?? '/', `${protocol}://${host}`);
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  }
  const method = req.method ?? 'GET';
  const init: RequestInit & { duplex?: 'half' } = { method, headers, signal: controller.signal };
  if (method !== 'GET' && method !== 'HEAD') {
    const parsed = alreadyParsedBody(req);
    if (parsed !== undefined) {
      // A body parser mounted before us read the stream; hand the wire the same JSON again.
      headers.delete('content-length');
      init.body = parsed;
    } else {
      init.body = Readable.toWeb(req) as ReadableStream<Uint8Array>;
      init.duplex = 'half';
    }
  }
  return new Request(url, init);
}

function alreadyParsedBody(req: NodeRequestLike): string | undefined {
  if (!req.readableEnded && !(req as { _body?: boolean })._body) return undefined;
  if (req.body === undefined) return '';
  if (typeof req.body === 'string') return req.body;
  if (Buffer.isBuffer(req.body)) return req.body.toString('utf8');
  return JSON.stringify(req.body);
}
