/**
 * The Express adapter translates and nothing more: streams with backpressure, turns a client
 * disconnect into the Request's abort signal, keeps every Set-Cookie, hands over a body a
 * parser already read, and lets the host's own /.well-known paths through.
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { Service } from '@service/core/wire';
import express from 'express';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openTestStore } from '../../core/test/support/stores.js';
import { testService } from '../../core/test/wire/support/wire.js';
import { type ExpressServer, serveWithExpress } from './support/serve.js';

let server: ExpressServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A stand-in service: the adapter must not care what answers. */
function fakeService(
  fetch: (request: Request) => Promise<Response>,
  wellKnown?: Service['wellKnown'],
): Service {
  return {
    fetch,
    wellKnown: wellKnown ?? (async () => null),
    close: async () => {},
    context: {} as never,
    door: null,
  };
}

function waitFor(check: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (check()) return resolve();
      if (Date.now() > until) return reject(new Error('timed out'));
      setTimeout(tick, 10);
    };
    tick();
  });
}

/** Sends `head` as written (a malformed Host, an absolute-form target) and reads the answer. */
function rawRequest(base: string, head: string): Promise<{ status: number; body: string }> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString();
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const split = text.indexOf('\r\n\r\n');
      resolve({ status: Number(text.split(' ')[1]), body: text.slice(split + 4) });
    });
    socket.end(`${head}\r\nConnection: close\r\n\r\n`);
  });
}

describe('@service/express', () => {
  it('hands the wire the full original URL, method, headers and body', async () => {
    let seen: { url: string; method: string; type: string | null; body: string } | undefined;
    server = await serveWithExpress(
      fakeService(async (request) => {
        seen = {
          url: request.url,
          method: request.method,
          type: request.headers.get('content-type'),
          body: await request.text(),
        };
        return new Response('{"ok":true}', { status: 201, headers: { 'content-type': 'application/json' } });
      }),
    );
    const response = await fetch(`${server.url}/api/service/threads/t1?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ ok: true });
    expect(seen).toEqual({
      url: `${server.url}/api/service/threads/t1?x=1`,
      method: 'POST',
      type: 'application/json',
      body: '{"a":1}',
    });
  });

  it('hands over a JSON body that a parser mounted earlier already read', async () => {
    let body = '';
    server = await serveWithExpress(
      fakeService(async (request) => {
        body = await request.text();
        return new Response(null, { status: 204 });
      }),
      { before: (app) => app.use(express.json()) },
    );
    const response = await fetch(`${server.url}/api/service/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"message":"hi"}',
    });
    expect(response.status).toBe(204);
    expect(JSON.parse(body)).toEqual({ message: 'hi' });
  });

  it.each([false, true])(
    'hands a form that express.urlencoded({ extended: %s }) already read back as a form',
    async (extended) => {
      let seen: { type: string | null; body: string } | undefined;
      server = await serveWithExpress(
        fakeService(async (request) => {
          seen = { type: request.headers.get('content-type'), body: await request.text() };
          return new Response(null, { status: 204 });
        }),
        { before: (app) => app.use(express.urlencoded({ extended }), express.json()) },
      );
      await fetch(`${server.url}/api/service/mcp/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=password&scope=a+b&scope=c&x%5By%5D=1',
      });
      expect(seen?.type).toBe('application/x-www-form-urlencoded');
      const form = new URLSearchParams(seen?.body);
      expect(form.get('grant_type')).toBe('password');
      expect(form.getAll('scope')).toEqual(['a b', 'c']);
      expect(form.get('x[y]')).toBe('1');
    },
  );

  it('keeps the door’s OAuth forms working behind express.urlencoded() and express.json()', async () => {
    const store = await openTestStore();
    const service = await testService(store, {
      mcp: { productName: 'Acme' },
      oauth: { session: () => ({ subject: 'ada' }), principal: (subject: string) => ({ subject }) },
      env: { SERVICE_BASE_URL: 'http://host.test' },
    });
    try {
      server = await serveWithExpress(service, {
        before: (app) => app.use(express.urlencoded(), express.json()),
      });
      const token = (body: string) =>
        fetch(`${server!.url}/api/service/mcp/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body,
        });
      // Read as a form: the grant type is seen, and a repeated field is still refused.
      const unsupported = await token('grant_type=password');
      expect(unsupported.status).toBe(400);
      expect(await unsupported.json()).toMatchObject({ error: 'unsupported_grant_type' });
      const repeated = await token('grant_type=password&grant_type=password');
      expect(await repeated.json()).toMatchObject({ error: 'invalid_request' });
      const revoke = await fetch(`${server.url}/api/service/mcp/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'token=unknown&client_id=nobody',
      });
      expect(await revoke.json()).toMatchObject({ error: 'invalid_client' }); // the client_id was read
    } finally {
      await server?.close();
      server = undefined;
      await service.close();
      await store.dispose();
    }
  });

  it('keeps every Set-Cookie header apart', async () => {
    server = await serveWithExpress(
      fakeService(async () => {
        const headers = new Headers();
        headers.append('set-cookie', 'a=1; Path=/');
        headers.append('set-cookie', 'b=2; Path=/');
        return new Response('ok', { headers });
      }),
    );
    const response = await fetch(`${server.url}/api/service/x`);
    expect(response.headers.getSetCookie()).toEqual(['a=1; Path=/', 'b=2; Path=/']);
  });

  it('turns a client disconnect into the Request abort signal and cancels the body', async () => {
    let signal: AbortSignal | undefined;
    let cancelled = false;
    server = await serveWithExpress(
      fakeService(async (request) => {
        signal = request.signal;
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(': keepalive\n\n'));
          },
          cancel() {
            cancelled = true;
          },
        });
        return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
      }),
    );
    const controller = new AbortController();
    const response = await fetch(`${server.url}/api/service/threads/t/stream`, { signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    expect(signal?.aborted).toBe(false);
    controller.abort();
    await waitFor(() => signal?.aborted === true && cancelled);
  });

  it('streams with backpressure: a client that does not read stops the producer', async () => {
    let pulled = 0;
    const chunk = new Uint8Array(256 * 1024);
    server = await serveWithExpress(
      fakeService(async () => {
        const body = new ReadableStream<Uint8Array>(
          {
            pull(controller) {
              pulled++;
              controller.enqueue(chunk);
            },
          },
          { highWaterMark: 0 },
        );
        return new Response(body);
      }),
    );
    const { port } = new URL(server.url);
    const req = httpRequest({ host: '127.0.0.1', port, path: '/api/service/big' });
    const paused = await new Promise<import('node:http').IncomingMessage>((resolve) => {
      req.on('response', (res) => {
        res.pause();
        resolve(res);
      });
      req.end();
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const whilePaused = pulled;
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Socket buffers hold a few megabytes at most; an unbounded producer would be far past that.
    expect(pulled).toBeLessThan(200);
    expect(pulled).toBe(whilePaused);
    let received = 0;
    paused.on('data', (data: Buffer) => {
      received += data.length;
    });
    paused.resume();
    await waitFor(() => pulled > whilePaused + 5);
    expect(received).toBeGreaterThan(0);
    req.destroy();
  });

  it('falls through to the host for /.well-known paths the door does not answer', async () => {
    const wellKnown: Service['wellKnown'] = async (request) =>
      new URL(request.url).pathname === '/.well-known/mcp-server-card' ? new Response('{"card":1}') : null;
    server = await serveWithExpress(
      fakeService(async () => new Response(null, { status: 204 }), wellKnown),
      {
        after: (app) =>
          app.get('/.well-known/security.txt', (_req, res) => {
            res.type('text/plain').send('Contact: host');
          }),
      },
    );
    expect(await (await fetch(`${server.url}/.well-known/mcp-server-card`)).text()).toBe('{"card":1}');
    expect(await (await fetch(`${server.url}/.well-known/security.txt`)).text()).toBe('Contact: host');
    expect((await fetch(`${server.url}/.well-known/other`)).status).toBe(404);
  });

  it.each([false, true])(
    'answers 400 malformed_url to a malformed or missing Host (fast path: %s), never a 500',
    async (fastPath) => {
      let reached = 0;
      server = await serveWithExpress(
        fakeService(
          async () => {
            reached++;
            return new Response(null, { status: 204 });
          },
          async () => new Response('{"card":1}'),
        ),
        { fastPath },
      );
      for (const head of [
        'GET /api/service/threads HTTP/1.1\r\nHost: a b',
        'GET /api/service/threads HTTP/1.1\r\nHost: evil.com/x',
        'GET /api/service/threads HTTP/1.1\r\nHost: ',
        'GET /api/service/threads HTTP/1.0',
        'GET /.well-known/mcp-server-card HTTP/1.1\r\nHost: a b',
      ]) {
        const answer = await rawRequest(server.url, head);
        expect(answer.status, head).toBe(400);
        expect(JSON.parse(answer.body), head).toEqual({
          error: { code: 'malformed_url', message: expect.stringContaining('Host') },
        });
      }
      expect(reached).toBe(0);
    },
  );

  it('leaves requests outside /api/service to the host, and says once where to mount it', async () => {
    const { createServer } = await import('node:http');
    const { toExpressHandler } = await import('../src/index.js');
    const store = await openTestStore();
    const service = await testService(store);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const app = express();
    // Mounted without a path (every request reaches it), and again at a wrong one.
    app.use(toExpressHandler(service));
    app.use('/service', toExpressHandler(service));
    app.get('/hello', (_req, res) => void res.json({ host: true }));
    const http = createServer(app);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
    try {
      // The host's own route still answers, not the wire's 404.
      const hello = await fetch(`${base}/hello`);
      expect(hello.status).toBe(200);
      expect(await hello.json()).toEqual({ host: true });
      // The wire still answers its own paths.
      expect((await fetch(`${base}/api/service/status`, { headers: { 'x-test-user': 'ada' } })).status).toBe(
        200,
      );
      // A wrong mount path is the host's 404, and a warning that names the right one.
      expect((await fetch(`${base}/service/status`)).status).toBe(404);
      await fetch(`${base}/service/threads`);
      // A right mount reached in another case (Express matches paths so) is the wire's own 404.
      const cased = await fetch(`${base}/API/Service/status`);
      expect(cased.status).toBe(404);
      expect(await cased.json()).toMatchObject({ error: { code: 'route_not_found' } });
      const warnings = warn.mock.calls.map((call) => String(call[0]));
      expect(warnings.filter((text) => text.includes("'/service'"))).toHaveLength(1);
      expect(warnings.find((text) => text.includes("'/service'"))).toContain('/api/service');
    } finally {
      warn.mockRestore();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
      await service.close();
      await store.dispose();
    }
  });

  it('passes a failing service to Express’s error handling', async () => {
    server = await serveWithExpress(
      fakeService(async () => {
        throw new Error('boom');
      }),
      {
        after: (app) =>
          app.use(
            (_error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
              res.status(500).json({ handledBy: 'host' });
            },
          ),
      },
    );
    const response = await fetch(`${server.url}/api/service/x`);
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ handledBy: 'host' });
  });
});

describe('withService (the fast path)', () => {
  it('answers the wire and the door’s documents itself and hands everything else to Express', async () => {
    const { createServer } = await import('node:http');
    const { withService } = await import('../src/index.js');
    const seen: string[] = [];
    const service = fakeService(
      async (request) => {
        seen.push(new URL(request.url).pathname + new URL(request.url).search);
        return new Response('{"wire":true}', { headers: { 'content-type': 'application/json' } });
      },
      async (request) =>
        new URL(request.url).pathname === '/.well-known/mcp-server-card' ? new Response('{"card":1}') : null,
    );
    const app = express();
    app.get('/hello', (_req, res) => {
      res.json({ host: true });
    });
    app.get('/.well-known/security.txt', (_req, res) => {
      res.type('text/plain').send('Contact: host');
    });
    app.get('/api/servicex', (_req, res) => {
      res.json({ host: 'servicex' });
    });
    const server = createServer(withService(app, service));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      expect(await (await fetch(`${base}/api/service/threads?limit=2`)).json()).toEqual({ wire: true });
      expect(await (await fetch(`${base}/api/service`)).json()).toEqual({ wire: true });
      expect(await (await fetch(`${base}/hello`)).json()).toEqual({ host: true });
      expect(await (await fetch(`${base}/api/servicex`)).json()).toEqual({ host: 'servicex' });
      expect(await (await fetch(`${base}/.well-known/mcp-server-card`)).text()).toBe('{"card":1}');
      expect(await (await fetch(`${base}/.well-known/security.txt`)).text()).toBe('Contact: host');
      expect(seen).toEqual(['/api/service/threads?limit=2', '/api/service']);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('routes an absolute-form target by its path, as Express’s router does', async () => {
    const { createServer } = await import('node:http');
    const { withService } = await import('../src/index.js');
    const seen: string[] = [];
    const service = fakeService(async (request) => {
      seen.push(request.url);
      return new Response('{"wire":true}', { headers: { 'content-type': 'application/json' } });
    });
    const app = express();
    app.get('/hello', (_req, res) => {
      res.json({ host: true });
    });
    const server = createServer(withService(app, service));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const wire = await rawRequest(
        base,
        'GET http://x.test/api/service/threads?limit=2 HTTP/1.1\r\nHost: x.test',
      );
      expect(wire.status).toBe(200);
      expect(JSON.parse(wire.body)).toEqual({ wire: true });
      expect(seen).toEqual(['http://x.test/api/service/threads?limit=2']);
      const host = await rawRequest(base, 'GET http://x.test/hello HTTP/1.1\r\nHost: x.test');
      expect(JSON.parse(host.body)).toEqual({ host: true });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('answers a generic 500 and reports the error when the service itself fails', async () => {
    const { createServer } = await import('node:http');
    const { withService } = await import('../src/index.js');
    const errors: unknown[] = [];
    const service = fakeService(async () => {
      throw new Error('boom');
    });
    const server = createServer(withService(express(), service, { onError: (error) => errors.push(error) }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const response = await fetch(`${base}/api/service/x`);
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({
        error: { code: 'internal_error', message: 'Internal server error.' },
      });
      expect(errors).toHaveLength(1);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
