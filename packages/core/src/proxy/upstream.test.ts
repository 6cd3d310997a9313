import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChunkSource, pooledUpstream } from './upstream.js';

describe('pooledUpstream', () => {
  let server: Server;
  let url: string;
  const sockets = new Set<unknown>();
  let handle: (req: IncomingMessage, res: ServerResponse) => void = () => {};
  const upstream = pooledUpstream();
  beforeAll(async () => {
    server = createServer((req, res) => handle(req, res));
    server.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    upstream.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const send = (method = 'GET', signal = new AbortController().signal) =>
    upstream.send({ url: `${url}/v1/x`, method, headers: {}, body: null, signal });
  const readAll = async (body: ChunkSource) => {
    let text = '';
    for (let chunk = await body.next(); chunk !== null; chunk = await body.next()) {
      text += Buffer.from(chunk).toString();
    }
    return text;
  };

  it('answers the status, headers and body, and reuses its connection', async () => {
    handle = (req, res) => res.writeHead(200, { 'x-seen': req.url! }).end('hello');
    const before = sockets.size;
    for (let i = 0; i < 3; i++) {
      const answer = await send();
      expect(answer.status).toBe(200);
      expect(answer.headers['x-seen']).toBe('/v1/x');
      expect(await readAll(answer.body!)).toBe('hello');
      // The next call comes a turn later, as a caller's next request would.
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(sockets.size - before).toBe(1);
  });

  it('answers no body for HEAD and 204, whatever the upstream sends', async () => {
    handle = (_req, res) => res.writeHead(204).end();
    expect((await send()).body).toBeNull();
    handle = (_req, res) => res.writeHead(200, { 'content-length': '5' }).end();
    const head = await send('HEAD');
    expect(head.status).toBe(200);
    expect(head.body).toBeNull();
  });

  it('reads only as fast as it is asked: the upstream waits while chunks wait', async () => {
    const chunk = 'x'.repeat(64 * 1024);
    let written = 0;
    let blocked = false;
    handle = (_req, res) => {
      res.writeHead(200);
      const write = () => {
        while (written < 400) {
          written += 1;
          if (!res.write(chunk)) {
            blocked = true;
            res.once('drain', write);
            return;
          }
        }
        res.end();
      };
      write();
    };
    const answer = await send();
    const first = await answer.body!.next();
    await new Promise((resolve) => setTimeout(resolve, 100));
    // 400 chunks are 25 MiB: unread, they stay with the upstream, not in our memory.
    expect(blocked).toBe(true);
    expect(written).toBeLessThan(400);
    const rest = await readAll(answer.body!);
    expect(first!.byteLength + rest.length).toBe(400 * chunk.length);
  });

  it('lets the upstream go when cancelled mid-body, and when the caller aborts', async () => {
    let closed = 0;
    handle = (_req, res) => {
      res.writeHead(200);
      res.write('first');
      res.on('close', () => {
        closed += 1;
      });
    };
    const answer = await send();
    expect(Buffer.from((await answer.body!.next())!).toString()).toBe('first');
    const pending = answer.body!.next();
    answer.body!.cancel(new Error('caller gone'));
    expect(await pending).toBeNull();
    const caller = new AbortController();
    const aborted = await send('GET', caller.signal);
    await aborted.body!.next();
    const waiting = aborted.body!.next();
    caller.abort(new Error('caller gone'));
    await expect(waiting).rejects.toThrow('caller gone');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBe(2);
  });

  it('rejects when the caller aborts before the answer, or the upstream is unreachable', async () => {
    handle = () => {};
    const caller = new AbortController();
    const sending = send('GET', caller.signal);
    await new Promise((resolve) => setTimeout(resolve, 20));
    caller.abort(new Error('caller gone'));
    await expect(sending).rejects.toThrow('caller gone');
    await expect(
      upstream.send({
        url: 'http://127.0.0.1:1/v1/x',
        method: 'GET',
        headers: {},
        body: null,
        signal: new AbortController().signal,
      }),
    ).rejects.toThrow();
  });
});
