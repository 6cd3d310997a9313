/**
 * A TCP relay in front of a server, for a browser to reach it through a network the test can
 * break: `cut` drops every connection open now, as a lost network does mid-reply, and while
 * `refuse(true)` holds, new connections are dropped at once, as a server that cannot be reached.
 */
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

export interface Relay {
  /** `http://127.0.0.1:<port>`: the target's origin as the browser reaches it through the relay. */
  url: string;
  cut(): void;
  refuse(refusing: boolean): void;
  close(): Promise<void>;
}

export async function startRelay(target: URL): Promise<Relay> {
  const open = new Set<Socket>();
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = connect(Number(target.port), target.hostname);
    const end = () => {
      for (const socket of [client, upstream]) {
        socket.destroy();
        open.delete(socket);
      }
    };
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('error', end).on('close', end);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cut = () => {
    for (const socket of open) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut,
    refuse(on) {
      refusing = on;
    },
    close() {
      cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
