/**
 * The ways the wire suites reach a service: its `fetch` handler directly, and a real Express
 * server on loopback through `@service/express` (real sockets, real disconnects).
 */

import { serveWithExpress } from '../../../../express/test/support/serve.js';
import type { Service } from '../../../src/wire/create-service.js';

/** `express`: `mountService(app)`; `express-fast`: `withService(app)` (wire requests skip Express). */
export type TransportKind = 'fetch' | 'express' | 'express-fast';
export const TRANSPORTS: TransportKind[] = ['fetch', 'express', 'express-fast'];

export interface Transport {
  /** The server's origin, for a transport that is a real server. */
  url?: string;
  fetch(request: Request): Promise<Response>;
  close(): Promise<void>;
}

export async function connect(kind: TransportKind, service: Service): Promise<Transport> {
  if (kind === 'fetch') return { fetch: (request) => service.fetch(request), close: async () => {} };
  return serveWithExpress(service, { fastPath: kind === 'express-fast' });
}
