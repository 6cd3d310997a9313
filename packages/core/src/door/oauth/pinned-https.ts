/**
 * The default way to a client ID metadata document: the system resolver for the addresses, and an
 * HTTPS GET connected to the one address the door checked. Pinning the connection closes the gap
 * a second DNS lookup would open (a name that answers a public address to the check and a private
 * one to the fetch); the certificate is still verified against the host name.
 */
import { lookup } from 'node:dns/promises';
import { request } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import type { ClientDocumentTransport } from '../config.js';

/** Statuses whose response must not carry a body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

export const pinnedHttpsTransport: ClientDocumentTransport = {
  async resolve(hostname) {
    const found = await lookup(hostname, { all: true, verbatim: true });
    return found.map((entry) => entry.address);
  },
  fetch(url, address, signal) {
    const family = isIP(address);
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    const pinned: LookupFunction = (_name, options, callback) => {
      if (options.all) callback(null, [{ address, family }]);
      else callback(null, address, family);
    };
    return new Promise<Response>((resolve, reject) => {
      const outgoing = request(
        {
          protocol: 'https:',
          hostname,
          port: url.port || 443,
          path: `${url.pathname}${url.search}`,
          method: 'GET',
          headers: { accept: 'application/json' },
          servername: isIP(hostname) ? undefined : hostname,
          lookup: pinned,
          // A pooled socket belongs to whatever address it was opened to; each fetch opens its own.
          agent: false,
          signal,
        },
        (incoming) => {
          const status = incoming.statusCode ?? 0;
          if (status < 200 || status > 599) {
            incoming.destroy();
            reject(new Error(`unexpected HTTP status ${status}`));
            return;
          }
          const headers = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) {
            if (typeof value === 'string') headers.set(name, value);
            else if (Array.isArray(value)) for (const item of value) headers.append(name, item);
          }
          if (NULL_BODY_STATUSES.has(status)) {
            incoming.resume();
            resolve(new Response(null, { status, headers }));
            return;
          }
          resolve(new Response(Readable.toWeb(incoming) as ReadableStream<Uint8Array>, { status, headers }));
        },
      );
      outgoing.on('error', reject);
      outgoing.end();
    });
  },
};
