/**
 * Client ID metadata documents for black-box suites: a real HTTP server on loopback stands in for
 * the clients' own sites, and a transport lets the door reach it. The transport's resolver gives
 * the host names below the addresses they would have on the internet (a public one, or a private,
 * loopback or link-local one for the SSRF guards), so the door's own address check runs as in
 * production; only the final fetch is redirected to the loopback server, whatever the address.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DoorOptions } from '../../../src/door/index.js';

type ClientDocumentTransport = NonNullable<DoorOptions['clientDocumentTransport']>;

/** A host name resolving to a public address: documents served under it are fetched. */
export const PUBLIC_HOST = 'client.example';

/** Host names and the addresses they resolve to; any other name does not resolve. */
const ADDRESSES: Record<string, string[]> = {
  [PUBLIC_HOST]: ['20.0.0.1'],
  'private.example': ['10.0.0.7'],
  'loopback.example': ['127.0.0.1'],
  'link-local.example': ['169.254.169.254'],
  'unique-local.example': ['fd00::1'],
  // A name that points both outward and inward is refused: the fetch could go to either.
  'split.example': ['20.0.0.1', '192.168.1.10'],
};

export interface ServedDocument {
  /** Default 200. */
  status?: number;
  /** Default `content-type: application/json`. */
  headers?: Record<string, string>;
  /** A JSON value (sent as JSON) or raw text. */
  body?: unknown;
  /** Never answer: the door's timeout must end the wait. */
  hang?: boolean;
}

export interface DocumentServer {
  transport: ClientDocumentTransport;
  /** Serves `document` at `https://{host}{path}` (as the door sees it); answers that URL. */
  serve(path: string, document: ServedDocument, host?: string): string;
  /** Requests the server received for `https://{host}{path}`. */
  hits(url: string): number;
  /** Every URL the door asked the transport to fetch. */
  fetched: string[];
  close(): Promise<void>;
}

export async function startDocumentServer(): Promise<DocumentServer> {
  const routes = new Map<string, ServedDocument>();
  const hits = new Map<string, number>();
  const fetched: string[] = [];
  const server: Server = createServer((request, response) => {
    const url = `https://${request.headers['x-document-host']}${request.url}`;
    hits.set(url, (hits.get(url) ?? 0) + 1);
    const route = routes.get(url);
    if (!route) {
      response.writeHead(404).end();
      return;
    }
    if (route.hang) return;
    const text = typeof route.body === 'string' ? route.body : JSON.stringify(route.body);
    response.writeHead(route.status ?? 200, { 'content-type': 'application/json', ...route.headers });
    response.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    transport: {
      async resolve(hostname) {
        const addresses = ADDRESSES[hostname];
        if (!addresses)
          throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
        return addresses;
      },
      fetch(url, _address, signal) {
        fetched.push(url.href);
        return fetch(`${origin}${url.pathname}${url.search}`, {
          headers: { 'x-document-host': url.host, accept: 'application/json' },
          redirect: 'manual',
          signal,
        });
      },
    },
    serve(path, document, host = PUBLIC_HOST) {
      const url = `https://${host}${path}`;
      routes.set(url, document);
      return url;
    },
    hits: (url) => hits.get(url) ?? 0,
    fetched,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}

/** Claude Code's document, as it publishes it: loopback callbacks without a port. */
export function claudeCodeDocument(clientId: string): Record<string, unknown> {
  return {
    client_id: clientId,
    client_name: 'Claude Code',
    redirect_uris: ['http://localhost/callback', 'http://127.0.0.1/callback'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

/** VS Code's document, as it publishes it: a device-code grant the door does not offer included. */
export function vsCodeDocument(clientId: string): Record<string, unknown> {
  return {
    client_id: clientId,
    client_name: 'Visual Studio Code',
    logo_uri: 'https://code.visualstudio.com/assets/branding/code-stable.png',
    grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    application_type: 'native',
    client_uri: 'https://vscode.dev/product',
    redirect_uris: ['http://127.0.0.1:33418/', 'https://vscode.dev/redirect'],
  };
}
