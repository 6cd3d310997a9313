import type { IncomingMessage, ServerResponse } from 'node:http';
import { clientIpOf } from '../http/client-ip.js';
import type { Logger } from '../http/logger.js';
import { requestIdOf } from '../http/request-id.js';
import { PROXY_PREFIX } from './create-proxy.js';
import { type AnswerBody, answerBody } from './forwarding.js';
import type { ProxiedAnswer, ProxyCore } from './proxy-core.js';
import type { IncomingCall } from './request.js';
import type { CallerSignal } from './upstream.js';

/**
 * A path under `/proxy/{provider}` made only of characters a URL keeps as they are, without dot
 * segments or percent-encodings, and a query likewise: such a URL reads the same raw as parsed,
 * and passes the input guard as it is. Any other proxy URL goes the `Request` way, where it is
 * parsed and guarded as every platform URL is.
 */
const PLAIN_PROXY_URL =
  /^\/proxy\/[A-Za-z0-9_-]+(?:\/[A-Za-z0-9._~!$&'()*+,;=:@-]*)*(?:\?[A-Za-z0-9._~!$&()*+,;=:@/?-]*)?$/;
const DOT_SEGMENT = /\/\.\.?(?:[/?]|$)/;

/** Whether the Node listener answers this request URL itself. */
export function isPlainProxyUrl(url: string): boolean {
  return url.startsWith(`${PROXY_PREFIX}/`) && PLAIN_PROXY_URL.test(url) && !DOT_SEGMENT.test(url);
}

export interface ProxyListenerOptions {
  core: ProxyCore;
  logger: Logger;
  /** The answer for an error the metered path threw (the host's one mapping of errors). */
  answerError(error: unknown, requestId: string): Response;
  /**
   * The `Strict-Transport-Security` value every answer carries (in production on HTTPS), as
   * every other answer of the platform does; null for none.
   */
  strictTransport: string | null;
}

/**
 * The provider proxy straight on `node:http`: the same metered path as the Hono routes (the
 * core), without building a WHATWG `Request` and `Response` per call. The caller's body is read
 * from the `IncomingMessage`, the answer written to the `ServerResponse` as the upstream sends
 * it, only as fast as the caller takes it.
 *
 * @see docs/proxy.md "Serving"
 */
export function createProxyListener(options: ProxyListenerOptions) {
  return async function proxyListener(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const requestId = requestIdOf(header(req, 'x-request-id'));
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const pathname = query < 0 ? url : url.slice(0, query);
    const providerEnd = pathname.indexOf('/', PROXY_PREFIX.length + 1);
    const gone = new GoneSignal();
    let body: AnswerBody | null = null;
    res.once('close', () => {
      if (res.writableFinished) return;
      gone.abort(new Error('The caller went away'));
      // A caller gone mid-answer: the upstream is let go and the call billed for what it used.
      body?.abandon(gone.reason);
    });
    const call: IncomingCall = {
      method: (req.method ?? 'GET').toUpperCase(),
      provider: pathname.slice(PROXY_PREFIX.length + 1, providerEnd < 0 ? undefined : providerEnd),
      subPath: providerEnd < 0 ? '/' : pathname.slice(providerEnd),
      search: query < 0 ? '' : url.slice(query),
      header: (name) => header(req, name),
      headers: () => headerEntries(req),
      // As `Request.body`: none for GET and HEAD, else the body (maybe empty). Reading stops at
      // the size cap without destroying the request, so a 413 can still be answered.
      body: () =>
        req.method === 'GET' || req.method === 'HEAD' ? null : req.iterator({ destroyOnReturn: false }),
      clientAddress: (trustedProxies) =>
        clientIpOf(req.socket.remoteAddress, header(req, 'x-forwarded-for'), { trustedProxies }),
      signal: gone,
      requestId,
    };
    let status = 500;
    try {
      const answer = await options.core.handle(call);
      status = answer.status;
      if (answer instanceof Response) {
        await writeResponse(res, answer, requestId, options.strictTransport);
      } else {
        log(status);
        if (answer.body) body = answerBody(answer.body, answer.tap);
        await writeAnswer(res, answer, body, requestId, options.strictTransport);
        return;
      }
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
      } else {
        const refusal = options.answerError(error, requestId);
        status = refusal.status;
        await writeResponse(res, refusal, requestId, options.strictTransport);
      }
    }
    log(status);

    function log(answered: number) {
      options.logger.info('request', {
        request_id: requestId,
        method: call.method,
        path: pathname,
        status: answered,
        duration_ms: Math.round((performance.now() - started) * 100) / 100,
      });
    }
  };
}

/** Writes the upstream's answer as it comes, waiting for the caller to take each chunk. */
async function writeAnswer(
  res: ServerResponse,
  answer: ProxiedAnswer,
  body: AnswerBody | null,
  requestId: string,
  strictTransport: string | null,
): Promise<void> {
  answer.headers['x-request-id'] = requestId;
  if (strictTransport) answer.headers['strict-transport-security'] = strictTransport;
  res.writeHead(answer.status, answer.headers);
  if (!body) {
    res.end();
    return;
  }
  try {
    for (;;) {
      const chunk = await body.next();
      if (chunk === null) break;
      if (res.destroyed) return;
      if (!res.write(chunk)) await drained(res);
    }
    res.end();
  } catch {
    // The upstream broke off: so does the answer (the caller sees an incomplete body).
    res.destroy();
  }
}

/** A refusal (a small JSON body) written to the caller. */
async function writeResponse(
  res: ServerResponse,
  response: Response,
  requestId: string,
  strictTransport: string | null,
): Promise<void> {
  const content = Buffer.from(await response.arrayBuffer());
  const headers: Record<string, string> = {};
  for (const [name, value] of response.headers) headers[name] = value;
  headers['x-request-id'] = requestId;
  if (strictTransport) headers['strict-transport-security'] = strictTransport;
  headers['content-length'] = String(content.byteLength);
  // A body refused for its size is not read on: the connection closes after the answer.
  if (response.status === 413) headers.connection = 'close';
  res.writeHead(response.status, headers).end(content);
}

/**
 * Aborted when the caller goes away, as an `AbortSignal` is (listeners run once, in the order
 * added), without an `AbortController` and its event target per call.
 */
class GoneSignal implements CallerSignal {
  aborted = false;
  reason: unknown = undefined;
  #listeners: Array<() => void> = [];

  abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted && !this.#listeners.includes(listener)) this.#listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.#listeners.indexOf(listener);
    if (at >= 0) this.#listeners.splice(at, 1);
  }
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  if (value === undefined) return null;
  return typeof value === 'string' ? value : value.join(', ');
}

function headerEntries(req: IncomingMessage): Array<[string, string]> {
  const entries: Array<[string, string]> = [];
  for (const name in req.headers) {
    const value = req.headers[name];
    if (value !== undefined) entries.push([name, typeof value === 'string' ? value : value.join(', ')]);
  }
  return entries;
}
