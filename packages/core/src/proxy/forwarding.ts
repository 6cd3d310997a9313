/**
 * What crosses the proxy: which request headers reach the upstream, which response headers reach
 * the caller, and the metered response body that reports when it ends.
 *
 * @see docs/proxy.md "Forwarding"
 */

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
 * Caller headers minus credentials, hop-by-hop headers and anything naming a tenant or identity
 * (`x-service-*`, `x-tenant-*`): the tenant comes from the key alone. The upstream is asked for an
 * uncompressed body so usage can be read as it passes.
 */
export function upstreamRequestHeaders(
  incoming: Headers,
  credential: { header: string; value: string } | null,
): Headers {
  const headers = new Headers();
  for (const [name, value] of incoming) {
    if (DROPPED_REQUEST_HEADERS.has(name) || name.startsWith('x-service-') || name.startsWith('x-tenant'))
      continue;
    headers.set(name, value);
  }
  headers.set('accept-encoding', 'identity');
  if (credential) headers.set(credential.header, credential.value);
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

/** Upstream response headers for the caller (fetch has already decoded any content encoding). */
export function callerResponseHeaders(upstream: Headers): Headers {
  const headers = new Headers();
  for (const [name, value] of upstream) {
    if (DROPPED_RESPONSE_HEADERS.has(name)) continue;
    headers.set(name, value);
  }
  if (upstream.has('content-encoding')) {
    headers.delete('content-encoding');
    headers.delete('content-length');
  }
  return headers;
}

/**
 * Passes the upstream body through chunk by chunk, pulling only as fast as the caller reads, and
 * shows each chunk to `observe`. `onEnd(true)` runs when the upstream finished, `onEnd(false)`
 * when the caller went away or the upstream broke off; once either way.
 *
 * A completed answer is not complete for the caller until `onEnd(true)` resolves (the bill is
 * durable): the stream's end waits for it, and with a declared `Content-Length` so does the chunk
 * that completes it (a client reading by length would otherwise be done before the bill is).
 */
export function observedBody(
  upstream: ReadableStream<Uint8Array>,
  observe: (chunk: Uint8Array) => void,
  onEnd: (completed: boolean) => Promise<void> | void,
  contentLength: number | null = null,
  /** Aborted when no one will read the body (the caller is gone): the call ends as cut. */
  abandoned?: AbortSignal,
): ReadableStream<Uint8Array> {
  const reader = upstream.getReader();
  let ended = false;
  let seen = 0;
  const end = async (completed: boolean) => {
    if (ended) return;
    ended = true;
    await onEnd(completed);
  };
  const abandon = () => {
    void reader.cancel(abandoned?.reason).catch(() => {});
    void end(false);
  };
  if (abandoned?.aborted) abandon();
  else abandoned?.addEventListener('abort', abandon, { once: true });
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let result: ReadableStreamReadResult<Uint8Array>;
        try {
          result = await reader.read();
        } catch (error) {
          void end(false);
          controller.error(error);
          return;
        }
        if (result.done) {
          await end(true);
          controller.close();
          return;
        }
        observe(result.value);
        seen += result.value.byteLength;
        if (contentLength !== null && seen >= contentLength) await end(true);
        controller.enqueue(result.value);
      },
      async cancel(reason) {
        await reader.cancel(reason).catch(() => {});
        void end(false);
      },
    },
    { highWaterMark: 0 },
  );
}
