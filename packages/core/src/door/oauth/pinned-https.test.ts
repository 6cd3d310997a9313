/**
 * The default transport to client ID metadata documents: it connects to the address it was given
 * (never to what the host name resolves to), verifies the certificate against the host name, and
 * hands back redirects unfollowed. The host name below does not resolve anywhere, so a request
 * that reaches the local TLS server got there through the pinned address alone.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TSX_LOADER } from '../../../test/support/spawn.js';
import { pinnedHttpsTransport } from './pinned-https.js';

const HOST = 'document.invalid';
let folder: string;
let server: Server;
let port: number;
const servernames: string[] = [];

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'pinned-https-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${HOST}`,
      '-addext',
      `subjectAltName=DNS:${HOST}`,
      '-keyout',
      join(folder, 'key.pem'),
      '-out',
      join(folder, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  const credentials = {
    key: readFileSync(join(folder, 'key.pem')),
    cert: readFileSync(join(folder, 'cert.pem')),
  };
  const context = createSecureContext(credentials);
  server = createServer(
    {
      ...credentials,
      // Records the name each client asked for, handshake refused or not.
      SNICallback: (name, callback) => {
        servernames.push(name);
        callback(null, context);
      },
    },
    (request, response) => {
      if (request.url === '/moved') {
        response.writeHead(302, { location: `https://${HOST}/client.json` }).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
      response.end('{"client_id":"pinned"}');
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => {
    server?.closeAllConnections();
    server?.close(() => resolve());
  });
  rmSync(folder, { recursive: true, force: true });
});

describe('pinnedHttpsTransport', () => {
  it('connects to the given address with the host name as SNI, and refuses an untrusted certificate', async () => {
    const url = new URL(`https://${HOST}:${port}/client.json`);
    await expect(pinnedHttpsTransport.fetch(url, '127.0.0.1', AbortSignal.timeout(5000))).rejects.toThrow(
      /self[- ]signed/i,
    );
    expect(servernames).toContain(HOST);
  });

  it('answers the document, and a redirect as it came, when the certificate is trusted', async () => {
    // A child process trusts the test certificate (NODE_EXTRA_CA_CERTS is read only at start).
    const script = `
      import { pinnedHttpsTransport } from ${JSON.stringify(new URL('./pinned-https.ts', import.meta.url).href)};
      const answers = [];
      for (const path of ['/client.json', '/moved']) {
        const url = new URL('https://${HOST}:${port}' + path);
        const response = await pinnedHttpsTransport.fetch(url, '127.0.0.1', AbortSignal.timeout(5000));
        answers.push({ status: response.status, type: response.headers.get('content-type'),
          location: response.headers.get('location'), body: await response.text() });
      }
      console.log(JSON.stringify(answers));`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', TSX_LOADER, '--input-type=module', '-e', script],
      { env: { ...process.env, NODE_EXTRA_CA_CERTS: join(folder, 'cert.pem') } },
    );
    const [document, moved] = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(document).toEqual({
      status: 200,
      type: 'application/json',
      location: null,
      body: '{"client_id":"pinned"}',
    });
    expect(moved).toMatchObject({ status: 302, location: `https://${HOST}/client.json` });
    expect(servernames).toContain(HOST);
  }, 30_000);

  it('gives up when the signal aborts', async () => {
    // Accepts the connection and never says a word: only the signal ends the wait.
    const sockets: Socket[] = [];
    const silent = createTcpServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = new URL(`https://${HOST}:${(silent.address() as AddressInfo).port}/client.json`);
    try {
      await expect(pinnedHttpsTransport.fetch(url, '127.0.0.1', AbortSignal.timeout(200))).rejects.toThrow(
        /abort/i,
      );
      expect(sockets).toHaveLength(1);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});
