import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RuntimeConnection, ServiceClient, ServiceEvent } from '@service/sdk';

/** The provider `/search` calls: the demo platform's web search (`pnpm start` seeds it). */
export const SEARCH_PROVIDER = 'web-search';

/** What the tool knows about its platform, kept fresh by the event stream. */
export interface ToolState {
  balanceMicros: number | null;
  connections: RuntimeConnection[];
  lastEvent: ServiceEvent | null;
}

export interface DeployedTool {
  state: ToolState;
  /** `http://127.0.0.1:<port>` */
  url: string;
  close(): Promise<void>;
}

/**
 * A deployed tool the way the platform expects one: it reads its balance and connections at
 * start, follows the event stream (re-reading connections on `connection.*`, taking balances from
 * `billing.balance_changed`), and serves over HTTP: `/healthz`; `/` (what it knows); `/whoami`
 * (the `X-Service-*` identity headers the app proxy sent); `POST /echo` (the body back, as it
 * streams in); `/search?q=` (one metered call to `web-search` through the platform's proxy with
 * its App Key); `/ticks` (four server-sent events, `data: 0` to `data: 3`, 200 ms apart); and a
 * WebSocket at `/ws` that sends the identity headers it was opened with.
 */
export async function startDeployedTool(client: ServiceClient, port = 0): Promise<DeployedTool> {
  const state: ToolState = { balanceMicros: null, connections: [], lastEvent: null };
  const [balance, connections] = await Promise.all([client.balance(), client.connections.list()]);
  state.balanceMicros = balance.credits_remaining_micros;
  state.connections = connections;

  const stop = new AbortController();
  const following = (async () => {
    for await (const event of client.events.subscribe({ signal: stop.signal })) {
      state.lastEvent = event;
      if (event.kind === 'billing.balance_changed') state.balanceMicros = Math.max(0, event.remaining_micros);
      // Events are invalidation signals: the connections list is the truth. A failed re-read
      // keeps the old list until the next event, rather than ending the stream.
      if (event.kind.startsWith('connection.')) {
        try {
          state.connections = await client.connections.list({ signal: stop.signal });
        } catch (error) {
          if (stop.signal.aborted) break;
          console.error('could not re-read connections:', error instanceof Error ? error.message : error);
        }
      }
    }
  })().catch((error: unknown) => {
    console.error('event stream ended:', error instanceof Error ? error.message : error);
  });

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    if (path === '/whoami') {
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(identityOf(req)));
    }
    if (path === '/echo' && req.method === 'POST') {
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/octet-stream' });
      return void req.pipe(res);
    }
    if (path === '/search') {
      const query = new URL(req.url ?? '/', 'http://tool.invalid').searchParams.get('q') ?? '';
      return void client.proxy
        .fetch(SEARCH_PROVIDER, `/search?${new URLSearchParams({ q: query })}`)
        .then(async (answer) => {
          res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
        })
        .catch((error: unknown) => {
          res
            .writeHead(502, { 'content-type': 'application/json' })
            .end(JSON.stringify({ message: error instanceof Error ? error.message : String(error) }));
        });
    }
    if (path === '/ticks') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
      let tick = 0;
      const timer = setInterval(() => {
        res.write(`data: ${++tick}\n\n`);
        if (tick === 3) {
          clearInterval(timer);
          res.end();
        }
      }, 200);
      res.write(`data: ${tick}\n\n`);
      req.on('close', () => clearInterval(timer));
      return;
    }
    if (path !== '/') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        balance_micros: state.balanceMicros,
        connections: state.connections.map((c) => ({ slug: c.slug, status: c.status })),
        last_event: state.lastEvent ? { id: state.lastEvent.id, kind: state.lastEvent.kind } : null,
      }),
    );
  });
  // A WebSocket just big enough to show what reached it: one text message, then a close.
  server.on('upgrade', (req, socket) => {
    const key = req.headers['sec-websocket-key'];
    if (req.url !== '/ws' || typeof key !== 'string') return void socket.destroy();
    const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`,
    );
    const payload = Buffer.from(JSON.stringify(identityOf(req)));
    // Text frame (FIN + opcode 1), unmasked, 16-bit length; then a close frame.
    const header = Buffer.from([0x81, 126, payload.length >> 8, payload.length & 0xff]);
    socket.end(Buffer.concat([header, payload, Buffer.from([0x88, 0])]));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));

  return {
    state,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      stop.abort();
      await following;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The identity headers a request carries (through the app proxy: the signed-in user's). */
function identityOf(req: IncomingMessage): Record<string, string> {
  return Object.fromEntries(
    Object.entries(req.headers).flatMap(([name, value]) =>
      name.startsWith('x-service-') && typeof value === 'string' ? [[name, value]] : [],
    ),
  );
}
