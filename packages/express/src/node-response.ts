/**
 * Web `Response` -> Node response: status, headers (every `Set-Cookie` kept apart), and the
 * body streamed chunk by chunk with backpressure: the next chunk is read only once the socket
 * has taken the last (`drain`). A client that disconnects cancels the body, which ends a turn
 * stream's reading (never the turn).
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';

export async function sendWebResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  if (!response.body) {
    res.writeHead(response.status, response.statusText || undefined, headers);
    res.end();
    return;
  }
  if (isBounded(response)) {
    // A JSON answer is small and whole: one write, no stream machinery.
    const body = new Uint8Array(await response.arrayBuffer());
    headers['content-length'] = String(body.byteLength);
    res.writeHead(response.status, response.statusText || undefined, headers);
    res.end(body);
    return;
  }
  res.writeHead(response.status, response.statusText || undefined, headers);
  // Streams (SSE) must reach the client as they are written, not when a buffer fills.
  res.flushHeaders();
  const reader = response.body.getReader();
  const cancel = () => void reader.cancel().catch(() => {});
  res.once('close', cancel);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (res.destroyed) {
        cancel();
        return;
      }
      if (!res.write(value)) {
        await Promise.race([once(res, 'drain'), once(res, 'close')]);
      }
    }
    res.end();
  } catch (error) {
    // The body failed mid-stream: the status is out, so the connection is cut to signal it.
    res.destroy(error instanceof Error ? error : new Error(String(error)));
  } finally {
    res.off('close', cancel);
  }
}

/** JSON bodies are read whole; everything else (SSE, files) is streamed. */
function isBounded(response: Response): boolean {
  const type = response.headers.get('content-type') ?? '';
  return type.startsWith('application/json');
}
