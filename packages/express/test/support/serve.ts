/**
 * Serves a service through a real Express app on a loopback port, and a `fetch` that sends
 * web Requests to it over the network: the wire suites run through it as well as through
 * `service.fetch` directly.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Service } from '@service/core/wire';
import express from 'express';
import { mountService, withService } from '../../src/index.js';

export interface ExpressServer {
  url: string;
  app: express.Express;
  /** Sends `request` (any origin) to this server, keeping its path, method, headers and body. */
  fetch(request: Request): Promise<Response>;
  close(): Promise<void>;
}

export interface ServeOptions {
  /** Host middleware mounted before the service (a body parser, say). */
  before?: (app: express.Express) => void;
  /** Host routes mounted after it. */
  after?: (app: express.Express) => void;
  /** Serve through `withService(app, service)` (wire requests skip Express) instead of `mountService`. */
  fastPath?: boolean;
}

export async function serveWithExpress(service: Service, options: ServeOptions = {}): Promise<ExpressServer> {
  const app = express();
  options.before?.(app);
  if (!options.fastPath) mountService(app, service);
  options.after?.(app);
  const server = options.fastPath ? createServer(withService(app, service)) : createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    app,
    fetch: async (request) => {
      const target = new URL(request.url);
      const hasBody = request.method !== 'GET' && request.method !== 'HEAD' && request.body !== null;
      return fetch(`${url}${target.pathname}${target.search}`, {
        method: request.method,
        headers: request.headers,
        ...(hasBody ? { body: await request.arrayBuffer() } : {}),
        signal: request.signal,
        redirect: 'manual',
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
