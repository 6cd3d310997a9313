/**
 * `service ssh <deployment>` against the platform and a test broker running a real shell in a
 * pseudo-terminal: data both ways, resize, raw mode, the exit code, one-time tokens.
 *
 * @see docs/cli.md "ssh"
 */
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import {
  createTenantFixture,
  type RunningPlatform,
  startPlatform,
  type TenantFixture,
} from '../../core/test/support/platform.js';
import { openTestStore, type TestStore } from '../../core/test/support/stores.js';
import { run } from '../src/index.js';
import type { InputStream, OutputStream } from '../src/io.js';
import { createTestIo, type TestIo, writeConfigFile } from './support/io.js';
import { startTestBroker, type TestBroker } from './support/ssh-broker.js';

let store: TestStore;
let running: RunningPlatform;
let broker: TestBroker;
let tenant: TenantFixture;
const ios: TestIo[] = [];

beforeAll(async () => {
  store = await openTestStore();
  broker = await startTestBroker();
  running = await startPlatform(store, {
    env: { SERVICE_SSH_BROKER_URL: broker.url, SERVICE_SSH_BROKER_SECRET: broker.secret },
  });
  broker.setPlatformUrl(running.url);
  tenant = await createTenantFixture(running.platform);
});
afterAll(async () => {
  await running?.close();
  await broker?.close();
  await store?.dispose();
});
afterEach(async () => {
  await Promise.all(ios.splice(0).map((io) => io.dispose()));
});

/** A terminal: stdin that records raw mode, stdout that records output and can be resized. */
function terminal(tty: boolean) {
  const rawModes: boolean[] = [];
  const stdin = Object.assign(new PassThrough(), {
    isTTY: tty,
    setRawMode: (mode: boolean) => rawModes.push(mode),
  }) as PassThrough & InputStream;
  const screen = new EventEmitter();
  let output = '';
  const stdout: OutputStream & { columns: number; rows: number } = {
    isTTY: tty,
    columns: 80,
    rows: 24,
    write: (chunk) => {
      output += Buffer.from(chunk as Uint8Array).toString('utf8');
      screen.emit('output');
      return true;
    },
    on: (event, listener) => screen.on(event, listener),
    off: (event, listener) => screen.off(event, listener),
  };
  const resize = (columns: number, rows: number) => {
    stdout.columns = columns;
    stdout.rows = rows;
    screen.emit('resize');
  };
  /** Resolves once the output matches, failing after a few seconds with what was seen. */
  const waitFor = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!pattern.test(output)) return;
        screen.off('output', check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        screen.off('output', check);
        reject(new Error(`no ${pattern} in ${JSON.stringify(output)}`));
      }, 10_000);
      screen.on('output', check);
      check();
    });
  return { stdin, stdout, rawModes, resize, waitFor, output: () => output };
}

async function loggedInIo(streams: { stdin: InputStream; stdout: OutputStream }): Promise<TestIo> {
  const io = await createTestIo(streams);
  ios.push(io);
  await writeConfigFile(io, { apiBase: running.url, apiKey: tenant.cliKey, tenantId: tenant.tenantId });
  return io;
}

describe('service ssh', () => {
  it('runs an interactive shell: data both ways, resize, raw mode and the exit code', async () => {
    const term = terminal(true);
    const io = await loggedInIo(term);
    const exit = run(['ssh', 'test-app'], io);
    await term.waitFor(/\$ $/);
    expect(term.rawModes).toEqual([true]);

    term.stdin.write('stty size\r');
    await term.waitFor(/\b24 80\r\n\$ $/);
    term.resize(120, 40);
    term.stdin.write('stty size\r');
    await term.waitFor(/\b40 120\r\n\$ $/);
    term.stdin.write('echo "hello-$((6 * 7))"\r');
    await term.waitFor(/\bhello-42\r\n\$ $/);

    term.stdin.write('exit 7\r');
    expect(await exit).toBe(7);
    // The terminal is given back as it was.
    expect(term.rawModes).toEqual([true, false]);
    expect(broker.claims.at(-1)).toEqual({
      status: 200,
      body: expect.objectContaining({ deployment: { id: tenant.appId, slug: 'test-app' } }),
    });
  });

  it('sends the end of piped input, so a scripted session ends with the shell', async () => {
    const term = terminal(false);
    const io = await loggedInIo(term);
    const exit = run(['ssh', tenant.appId], io);
    term.stdin.end('echo piped-$((1 + 1))\r');
    expect(await exit).toBe(0);
    expect(term.output()).toContain('piped-2');
    expect(term.rawModes).toEqual([]);
  });

  it('exits 1 with a clear message for a deployment that is not there', async () => {
    const term = terminal(true);
    const io = await loggedInIo(term);
    expect(await run(['ssh', 'nope'], io)).toBe(1);
    expect(io.err()).toBe('No deployment "nope" in your tenant.\n');
    expect(term.rawModes).toEqual([]);
  });

  it('exits 2 for an empty or blank deployment name or one over 200 characters, before asking the platform', async () => {
    for (const [name, message] of [
      // Given but empty (an unset variable): said so, not "missing".
      ['', 'The deployment name is empty: service ssh <deployment>'],
      ['   ', 'The deployment name is blank.'],
      ['a'.repeat(201), 'The deployment name is over 200 characters.'],
    ] as const) {
      const term = terminal(true);
      const io = await loggedInIo(term);
      expect(await run(['ssh', name], io)).toBe(2);
      expect(io.err()).toMatch(new RegExp(`^${message}`));
    }
  });

  it('exits 2 without a deployment and 1 when not logged in', async () => {
    const io = await createTestIo();
    ios.push(io);
    expect(await run(['ssh'], io)).toBe(2);
    expect(io.err()).toMatch(/^Missing argument: service ssh <deployment>/);
    const other = await createTestIo();
    ios.push(other);
    expect(await run(['ssh', 'test-app'], other)).toBe(1);
    expect(other.err()).toBe('Not logged in. Run service login first.\n');
  });
});

describe('a broker that misbehaves', () => {
  /**
   * A platform whose broker is a bare WebSocket server that accepts any token and does what
   * `onConnection` says; same store, so the tenant's CLI key works on it.
   */
  async function withRawBroker(
    onConnection: (socket: WebSocket) => void,
    test: (io: TestIo, term: ReturnType<typeof terminal>) => Promise<void>,
    verifyStatus?: number,
  ) {
    const raw = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      handleProtocols: () => 'service-ssh.v1',
      verifyClient: (_info, done) => (verifyStatus ? done(false, verifyStatus) : done(true)),
    });
    await new Promise<void>((resolve) => raw.once('listening', () => resolve()));
    raw.on('connection', onConnection);
    const platform = await startPlatform(store, {
      env: {
        SERVICE_SSH_BROKER_URL: `ws://127.0.0.1:${(raw.address() as AddressInfo).port}`,
        SERVICE_SSH_BROKER_SECRET: broker.secret,
      },
    });
    try {
      const term = terminal(true);
      const io = await loggedInIo(term);
      await writeConfigFile(io, { apiBase: platform.url, apiKey: tenant.cliKey, tenantId: tenant.tenantId });
      await test(io, term);
    } finally {
      for (const client of raw.clients) client.terminate();
      await new Promise<void>((resolve) => raw.close(() => resolve()));
      await platform.close();
    }
  }

  it('exits with the code of an exit frame even when the broker leaves the socket open', async () => {
    await withRawBroker(
      (socket) => socket.send(JSON.stringify({ type: 'exit', code: 5 })),
      async (io, term) => {
        expect(await run(['ssh', 'test-app'], io)).toBe(5);
        expect(term.rawModes).toEqual([true, false]);
      },
    );
  });

  it('ends with 1, naming it, on an exit frame without a valid code, though the broker leaves the socket open', async () => {
    for (const code of [999, -1, 'x', null]) {
      await withRawBroker(
        (socket) => socket.send(JSON.stringify({ type: 'exit', code })),
        async (io, term) => {
          expect(await run(['ssh', 'test-app'], io), String(code)).toBe(1);
          expect(io.err()).toBe('\r\nssh: the broker sent an exit frame without a valid exit code\n');
          expect(term.rawModes).toEqual([true, false]);
        },
      );
    }
  });

  it('exits 1 and gives the terminal back when the connection drops before the shell exits', async () => {
    await withRawBroker(
      (socket) => {
        socket.send(JSON.stringify({ type: 'data', data: Buffer.from('$ ').toString('base64') }));
        setTimeout(() => socket.terminate(), 50);
      },
      async (io, term) => {
        expect(await run(['ssh', 'test-app'], io)).toBe(1);
        expect(term.output()).toBe('$ ');
        expect(io.err()).toBe('The connection to the broker closed before the shell exited.\n');
        expect(term.rawModes).toEqual([true, false]);
      },
    );
  });

  it("shows the broker's error frame and exits 1", async () => {
    await withRawBroker(
      (socket) => {
        socket.send(JSON.stringify({ type: 'error', message: 'Deployment is stopped', code: 'not_running' }));
        socket.close(1011);
      },
      async (io, term) => {
        expect(await run(['ssh', 'test-app'], io)).toBe(1);
        expect(io.err()).toBe('\r\nssh: Deployment is stopped\n');
        expect(term.rawModes).toEqual([true, false]);
      },
    );
  });

  it('exits 1 naming the status when the broker refuses the upgrade, leaving the terminal untouched', async () => {
    await withRawBroker(
      () => {},
      async (io, term) => {
        expect(await run(['ssh', 'test-app'], io)).toBe(1);
        expect(io.err()).toBe('The ssh broker refused the connection (HTTP 403).\n');
        expect(term.rawModes).toEqual([]);
      },
      403,
    );
  });
});

describe('a broker that is not there', () => {
  it('exits 1 naming the broker it could not reach, leaving the terminal untouched', async () => {
    const gone = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => gone.once('listening', () => resolve()));
    const url = `ws://127.0.0.1:${(gone.address() as AddressInfo).port}/ssh`;
    await new Promise<void>((resolve) => gone.close(() => resolve()));
    const platform = await startPlatform(store, {
      env: { SERVICE_SSH_BROKER_URL: url, SERVICE_SSH_BROKER_SECRET: broker.secret },
    });
    try {
      const term = terminal(true);
      const io = await loggedInIo(term);
      await writeConfigFile(io, { apiBase: platform.url, apiKey: tenant.cliKey, tenantId: tenant.tenantId });
      expect(await run(['ssh', 'test-app'], io)).toBe(1);
      expect(io.err()).toBe(`Could not reach the ssh broker at ${url} (ECONNREFUSED).\n`);
      expect(term.rawModes).toEqual([]);
    } finally {
      await platform.close();
    }
  });
});

describe('the broker protocol', () => {
  async function sessionToken(): Promise<{ broker_url: string; token: string }> {
    const response = await fetch(`${running.url}/api/cli/ssh-sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.cliKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ deployment: 'test-app' }),
    });
    return response.json();
  }

  const connect = (url: string, token: string, protocol = 'service-ssh.v1') =>
    new Promise<WebSocket | number>((resolve) => {
      const socket = new WebSocket(url, protocol, { headers: { authorization: `Bearer ${token}` } });
      socket.once('open', () => resolve(socket));
      socket.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    });

  it('accepts a session token once: a replay is refused with 401 before the upgrade', async () => {
    const { broker_url, token } = await sessionToken();
    const first = await connect(broker_url, token);
    expect(first).toBeInstanceOf(WebSocket);
    const exitFrame = new Promise<unknown>((resolve) =>
      (first as WebSocket).on('message', (m) => {
        const frame = JSON.parse(m.toString());
        if (frame.type === 'exit') resolve(frame);
      }),
    );
    (first as WebSocket).send(
      JSON.stringify({ type: 'data', data: Buffer.from('exit 3\r').toString('base64') }),
    );
    expect(await exitFrame).toEqual({ type: 'exit', code: 3 });
    expect(await connect(broker_url, token)).toBe(401);
  });

  it('refuses a made-up token', async () => {
    const { broker_url } = await sessionToken();
    expect(await connect(broker_url, `service_ssh_${'z'.repeat(43)}`)).toBe(401);
  });

  it('answers a malformed frame with an error frame', async () => {
    const { broker_url, token } = await sessionToken();
    const socket = (await connect(broker_url, token)) as WebSocket;
    const error = new Promise<unknown>((resolve) =>
      socket.on('message', (m) => {
        const frame = JSON.parse(m.toString());
        if (frame.type === 'error') resolve(frame);
      }),
    );
    socket.send(JSON.stringify({ type: 'resize', cols: 0, rows: 'x' }));
    expect(await error).toEqual({ type: 'error', message: 'Unknown frame', code: 'bad_frame' });
    socket.terminate();
  });
});
