import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The newest installed PostgreSQL server programs (Debian keeps them in a versioned folder), or
 * null when none is installed or `SERVICE_TEST_POSTGRES=0` asks for no PostgreSQL run: suites that
 * stop and start their own server skip then.
 */
export const POSTGRES_BIN: string | null = (() => {
  if (process.env.SERVICE_TEST_POSTGRES === '0') return null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
})();

export interface PostgresCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  /** Stops the server; `immediate` is a crash as far as clients can tell (no goodbye to sessions). */
  stop(mode?: 'immediate' | 'fast'): Promise<void>;
  /** Starts it again on the same port and waits until it accepts connections. */
  start(): Promise<void>;
  /**
   * Freezes the server (SIGSTOP to the postmaster and every backend): its connections stay open
   * but nothing answers, as with a stalled host or a silent network partition. `thaw` resumes it.
   */
  freeze(): Promise<void>;
  thaw(): Promise<void>;
  /** Stops the server and deletes its files. */
  dispose(): Promise<void>;
}

/**
 * A throwaway PostgreSQL server of the test's own, on a free loopback port, that the test may
 * stop and restart (a shared CI cluster must never be). The server refuses to run as root: as
 * root it runs as the `postgres` user the package created.
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  if (!POSTGRES_BIN) throw new Error('No PostgreSQL server programs are installed');
  const bin = POSTGRES_BIN;
  const dir = mkdtempSync(join(tmpdir(), 'service-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    chownSync(dir, Number(stdout.trim()), -1);
  }
  const pg = (program: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args])
      : run(join(bin, program), args);
  const port = await freePort();
  const data = join(dir, 'data');
  await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    '-c max_connections=100',
    '-c fsync=off',
  ].join(' ');
  const start = async () => {
    await pg('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', options, 'start']);
  };
  const stop = async (mode: 'immediate' | 'fast' = 'fast') => {
    await pg('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
  };
  /** The postmaster and its children (backends and helpers). */
  const processes = async (): Promise<number[]> => {
    const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(postmaster)]).catch(() => ({
      stdout: '',
    }));
    return [postmaster, ...stdout.split(/\s+/).filter(Boolean).map(Number)];
  };
  const signal = async (name: 'SIGSTOP' | 'SIGCONT') => {
    for (const pid of await processes()) {
      try {
        process.kill(pid, name);
      } catch {
        // Gone meanwhile.
      }
    }
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    freeze: () => signal('SIGSTOP'),
    thaw: () => signal('SIGCONT'),
    dispose: async () => {
      await signal('SIGCONT').catch(() => {});
      await stop('immediate').catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
