import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopbackServer {
  url: string;
  /** Every request received, in order. */
  requests: IncomingMessage[];
  close(): Promise<void>;
}

/**
 * A bare HTTP server on a free loopback port for the cases a healthy platform never produces on
 * demand (a 503, a hung answer, a dropped connection). Everything else is tested against the real
 * platform.
 */
export async function startLoopbackServer(
  handle: (req: IncomingMessage, res: ServerResponse, index: number) => void,
  port = 0,
): Promise<LoopbackServer> {
  const requests: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req);
    handle(req, res, requests.length - 1);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
