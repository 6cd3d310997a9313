import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from '@lydell/node-pty';
import {
  SSH_MAX_FRAME_BYTES,
  SSH_SUBPROTOCOL,
  type SshServerFrame,
  sshClientFrameSchema,
} from '@service/core/schemas';
import { WebSocketServer } from 'ws';

export interface TestBroker {
  /** `ws://127.0.0.1:<port>/ssh`: what the platform hands out as `broker_url`. */
  url: string;
  secret: string;
  /** Claims the broker made, as the platform answered them. */
  claims: Array<{ status: number; body: unknown }>;
  /** Point the broker at the platform once both are up. */
  setPlatformUrl(url: string): void;
  close(): Promise<void>;
}

/**
 * A reference ssh broker for tests: it speaks the documented protocol, claims each session token
 * with the platform before accepting the upgrade, and runs a real shell in a pseudo-terminal.
 *
 * @see docs/cli.md "ssh: the broker protocol"
 */
export async function startTestBroker(): Promise<TestBroker> {
  const secret = `test-broker-secret-${'x'.repeat(32)}`;
  const claims: TestBroker['claims'] = [];
  let platformUrl = '';
  const home = await mkdtemp(join(tmpdir(), 'service-ssh-home-'));

  const claim = async (request: IncomingMessage): Promise<boolean> => {
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (!token) return false;
    const response = await fetch(`${platformUrl}/api/cli/ssh-sessions/claim`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    claims.push({ status: response.status, body: await response.json() });
    return response.status === 200;
  };

  const server = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    path: '/ssh',
    maxPayload: SSH_MAX_FRAME_BYTES,
    handleProtocols: (protocols) => (protocols.has(SSH_SUBPROTOCOL) ? SSH_SUBPROTOCOL : false),
    verifyClient: (info, done) => {
      claim(info.req).then(
        (ok) => done(ok, 401, 'Unauthorized'),
        () => done(false, 502, 'Bad Gateway'),
      );
    },
  });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));

  server.on('connection', (socket) => {
    const shell = spawn('/bin/sh', [], {
      name: 'xterm-256color',
      cols: 80,
      rows: 24,
      cwd: home,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TERM: 'xterm-256color', PS1: '$ ' },
    });
    const send = (frame: SshServerFrame) => socket.send(JSON.stringify(frame));
    shell.onData((data) => send({ type: 'data', data: Buffer.from(data, 'utf8').toString('base64') }));
    shell.onExit(({ exitCode }) => {
      send({ type: 'exit', code: exitCode });
      socket.close(1000);
    });
    socket.on('message', (message) => {
      let parsed: ReturnType<typeof sshClientFrameSchema.safeParse>;
      try {
        parsed = sshClientFrameSchema.safeParse(JSON.parse(message.toString()));
      } catch {
        return send({ type: 'error', message: 'Frames must be JSON', code: 'bad_frame' });
      }
      if (!parsed.success) return send({ type: 'error', message: 'Unknown frame', code: 'bad_frame' });
      const frame = parsed.data;
      if (frame.type === 'data') shell.write(Buffer.from(frame.data, 'base64').toString('utf8'));
      else if (frame.type === 'resize') shell.resize(frame.cols, frame.rows);
      else shell.write('\u0004');
    });
    socket.on('close', () => shell.kill());
  });

  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ssh`,
    secret,
    claims,
    setPlatformUrl: (url) => {
      platformUrl = url;
    },
    close: async () => {
      for (const client of server.clients) client.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(home, { recursive: true, force: true });
    },
  };
}
