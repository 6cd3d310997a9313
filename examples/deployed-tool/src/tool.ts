import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RuntimeConnection, ServiceClient, ServiceEvent } from '@service/sdk';

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
 * `billing.balance_changed`), and serves `/healthz` and `/` (what it knows) over HTTP.
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
    if (req.url === '/healthz') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    if (req.url !== '/') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        balance_micros: state.balanceMicros,
        connections: state.connections.map((c) => ({ slug: c.slug, status: c.status })),
        last_event: state.lastEvent ? { id: state.lastEvent.id, kind: state.lastEvent.kind } : null,
      }),
    );
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
