/**
 * What crosses the proxy: which request headers reach the upstream, which response headers reach
 * the caller, and the metered response body that reports when it ends.
 *
 * @see docs/proxy.md "Forwarding"
 */
import type { ChunkSource, UpstreamAnswer } from './upstream.js';

/** Hop-by-hop headers (RFC 9110 7.6.1) and headers we set ourselves. */
const DROPPED_REQUEST_HEADERS = new Set([
  'authorization',
  'x-api-key',
  'cookie',
  'host',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'accept-encoding',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-real-ip',
]);

/**
 * `x-service-*` or `x-tenant*`, spelled with underscores too: servers behind CGI-style gateways
 * read `X_Service_Tenant_Id` as `X-Service-Tenant-Id`.
 */
function namesTenant(name: string): boolean {
  const dashed = name.includes('_') ? name.replaceAll('_', '-') : name;
  return dashed.startsWith('x-service-') || dashed.startsWith('x-tenant');
}

/**
 * Caller headers minus credentials, hop-by-hop headers and anything naming a tenant or identity
 * (`x-service-*`, `x-tenant-*`): the tenant comes from the key alone. The upstream is asked for an
 * uncompressed body so usage can be read as it passes.
 */
export function upstreamRequestHeaders(
  incoming: Iterable<[string, string]>,
  credential: { header: string; value: string } | null,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of incoming) {
    if (DROPPED_REQUEST_HEADERS.has(name) || namesTenant(name)) continue;
    headers[name] = value;
  }
  headers['accept-encoding'] = 'identity';
  if (credential) headers[credential.header] = credential.value;
  return headers;
}

const DROPPED_RESPONSE_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'set-cookie',
]);

/** Upstream response headers for the caller; a body the client decoded loses its encoding and length. */
export function callerResponseHeaders(upstream: UpstreamAnswer): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name in upstream.headers) {
    if (DROPPED_RESPONSE_HEADERS.has(name)) continue;
    if (upstream.decoded && (name === 'content-encoding' || name === 'content-length')) continue;
    headers[name] = upstream.headers[name]!;
  }
  return headers;
}

/** What reads a metered answer's usage as it passes, and bills it at its end. */
export interface MeterTap {
  observe(chunk: Uint8Array): void;
  /**
   * Runs once, when the upstream finished (`true`) or the caller went away or the upstream broke
   * off (`false`); a completed answer is complete for the caller only once this resolves.
   */
  end(completed: boolean): Promise<void> | undefined;
  /** The answer's declared `Content-Length`, if any. */
  contentLength: number | null;
}

/** An answer's body as the caller is given it, chunk by chunk, whichever surface writes it. */
export interface AnswerBody {
  /** The next chunk for the caller, or null at the end; rejects when the upstream broke off. */
  next(): Promise<Uint8Array | null>;
  /** The caller is gone: the upstream is let go and the call ends as cut. */
  abandon(reason?: unknown): void;
}

/**
 * Passes the upstream body through chunk by chunk, pulling only as fast as the caller reads, and
 * shows each chunk to the tap (none for an answer passed through unbilled).
 *
 * A completed answer is not complete for the caller until `tap.end(true)` resolves (the bill is
 * durable): the end waits for it, and so does the chunk that completes the answer when that is
 * known as it is handed out: by a declared `Content-Length` (a client reading by length would
 * otherwise be done before the bill is), or by a source that has already ended (a short answer
 * arrives with its end). That chunk then leaves with the end, in one write to the caller.
 */
export function answerBody(source: ChunkSource, tap: MeterTap | null): AnswerBody {
  let ended = false;
  let seen = 0;
  const end = async (completed: boolean) => {
    if (ended || !tap) return;
    ended = true;
    await tap.end(completed);
  };
  return {
    async next() {
      let chunk: Uint8Array | null;
      try {
        chunk = await source.next();
      } catch (error) {
        void end(false);
        throw error;
      }
      if (chunk === null) {
        await end(true);
        return null;
      }
      if (tap) {
        tap.observe(chunk);
        seen += chunk.byteLength;
        if ((tap.contentLength !== null && seen >= tap.contentLength) || source.exhausted?.()) {
          await end(true);
        }
      }
      return chunk;
    },
    abandon(reason) {
      source.cancel(reason);
      void end(false);
    },
  };
}

/** An answer body as a WHATWG stream that pulls only as fast as the caller reads. */
export function answerStream(body: AnswerBody): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let chunk: Uint8Array | null;
        try {
          chunk = await body.next();
        } catch (error) {
          controller.error(error);
          return;
        }
        if (chunk === null) controller.close();
        else controller.enqueue(chunk);
      },
      cancel(reason) {
        body.abandon(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
