import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for upstream providers on loopback, speaking their real wire formats: an
 * OpenAI-compatible chat completions API (JSON, and SSE with a final usage chunk when asked for
 * `stream_options.include_usage`), model listing, and a per-call search API. Only the edge we
 * cannot reach is faked.
 */
export interface FakeUpstream {
  url: string;
  /** Requests received, newest last. */
  requests: Array<{ method: string; path: string; headers: IncomingHttpHeaders; body: string }>;
  /** Usage the next completions report (default 10 prompt / 20 completion tokens); null: none. */
  usage: { prompt_tokens: number; completion_tokens: number } | null;
  /** While set, streamed completions wait after their first chunk until it resolves. */
  gate: Promise<void> | null;
  /** While set, every answer waits before its status line until it resolves. */
  held: Promise<void> | null;
  /** Requests whose caller (the proxy) let go before their answer was written. */
  abandoned: number;
  /** Answers every request with this status (and a JSON error body) while set. */
  failWith: number | null;
  close(): Promise<void>;
}

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const state: FakeUpstream = {
    url: '',
    requests: [],
    usage: { prompt_tokens: 10, completion_tokens: 20 },
    gate: null,
    held: null,
    abandoned: 0,
    failWith: null,
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0]!;
      state.requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
      res.once('close', () => {
        if (!res.writableFinished) state.abandoned++;
      });
      const held = state.held;
      if (held) void held.then(() => answer(state, req.method ?? 'GET', path, body, res));
      else void answer(state, req.method ?? 'GET', path, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

async function answer(state: FakeUpstream, method: string, path: string, body: string, res: ServerResponse) {
  if (state.failWith !== null) {
    res.writeHead(state.failWith, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'upstream says no', type: 'server_error' } }));
    return;
  }
  if (method === 'GET' && path === '/v1/models') {
    json(res, { object: 'list', data: [{ id: 'demo-small', object: 'model' }] });
    return;
  }
  if (method === 'POST' && path === '/v1/chat/completions') {
    let request: { model?: string; stream?: boolean; stream_options?: { include_usage?: boolean } } = {};
    try {
      request = JSON.parse(body);
      // A real provider refuses `null`, `[]` or `"x"` as a request: so does the stand-in.
      if (request === null || typeof request !== 'object' || Array.isArray(request)) throw new TypeError();
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'invalid JSON' } }));
      return;
    }
    const usage = state.usage && {
      ...state.usage,
      total_tokens: state.usage.prompt_tokens + state.usage.completion_tokens,
    };
    if (!request.stream) {
      json(res, {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: request.model,
        choices: [
          { index: 0, message: { role: 'assistant', content: 'Hello there' }, finish_reason: 'stop' },
        ],
        ...(usage ? { usage } : {}),
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const chunk = (delta: object, extra: object = {}) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', model: request.model, choices: [{ index: 0, delta }], ...extra })}\n\n`;
    res.write(chunk({ role: 'assistant', content: 'Hel' }));
    if (state.gate) await state.gate;
    res.write(chunk({ content: 'lo' }));
    if (request.stream_options?.include_usage && usage) {
      res.write(
        `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [], usage })}\n\n`,
      );
    }
    res.end('data: [DONE]\n\n');
    return;
  }
  if (path === '/empty') {
    // Done, nothing to say: a 204, as a DELETE often answers.
    res.writeHead(204);
    res.end();
    return;
  }
  if (path === '/search') {
    json(res, { results: [{ title: 'A result', url: 'https://example.com' }] });
    return;
  }
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message: 'no such route' } }));
}

function json(res: ServerResponse, value: unknown) {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}
