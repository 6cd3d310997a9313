/**
 * What the whole test suite needs from the machine beyond Node: a Chromium for the page tests,
 * a PostgreSQL server for the store suites' second run, and `curl` and `patch` for the tests that
 * run the docs' commands and check refine's diffs. Each is found where Debian puts it, else
 * installed with apt-get when this process may (root, or sudo without a password), else left out
 * with a notice: the suites that need it are skipped and counted, never failed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CHROMIUM_NAMES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];

/** The path of an executable on PATH, or null. */
function which(name) {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return null;
}

/** Newest Debian PostgreSQL server folder (`/usr/lib/postgresql/<version>/bin`), or null. */
function postgresBin() {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base)
      .filter((version) => existsSync(join(base, version, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return join(base, versions[0], 'bin');
  }
  const initdb = which('initdb');
  return initdb ? join(initdb, '..') : null;
}

function findChromium() {
  if (process.env.CHROMIUM_PATH && existsSync(process.env.CHROMIUM_PATH)) return process.env.CHROMIUM_PATH;
  for (const name of CHROMIUM_NAMES) {
    const path = which(name);
    if (path) return path;
  }
  return null;
}

/** Runs a command as root: directly when root, through `sudo -n` when that needs no password. */
function asRoot(args) {
  const root = process.getuid?.() === 0;
  if (!root && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status !== 0) return false;
  const [command, ...rest] = root ? args : ['sudo', '-n', ...args];
  return (
    spawnSync(command, rest, { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
      .status === 0
  );
}

let aptUpdated = false;
/** Installs Debian packages when this process may; true when they installed. */
function aptInstall(packages) {
  if (!which('apt-get')) return false;
  console.log(`test: installing ${packages.join(', ')} with apt-get`);
  if (!aptUpdated) aptUpdated = asRoot(['apt-get', 'update', '-qq']);
  return asRoot(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...packages]);
}

/** A Chromium path for the page tests, installing one if it can; null (with a notice) otherwise. */
export function prepareChromium() {
  const found = findChromium() ?? (aptInstall(['chromium']) ? findChromium() : null);
  if (!found) {
    console.log(
      'test: notice: no Chromium found and none could be installed (needs apt-get as root or sudo); the browser suites are skipped.',
    );
  }
  return found;
}

/** The programs some tests run (`curl`, `patch`), installing missing ones if it can; a notice for any still missing. */
export function prepareTools() {
  const missing = ['curl', 'patch'].filter((name) => !which(name));
  if (missing.length > 0) aptInstall(missing);
  const still = missing.filter((name) => !which(name));
  if (still.length > 0) {
    console.log(
      `test: notice: no ${still.join(' or ')} found and none could be installed (needs apt-get as root or sudo); the tests that run ${still.length > 1 ? 'them' : 'it'} are skipped.`,
    );
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * A throwaway PostgreSQL cluster on loopback for the store suites' Postgres run: `{ url, stop }`,
 * or null (with a notice) when no server can be found or installed. As root the server runs as
 * the `postgres` user the Debian package creates (it refuses to run as root).
 */
export async function startThrowawayPostgres() {
  const bin = postgresBin() ?? (aptInstall(['postgresql']) ? postgresBin() : null);
  if (!bin) {
    console.log(
      'test: notice: no PostgreSQL server found and none could be installed; the store suites run on the embedded store only.',
    );
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'service-test-pg-'));
  const root = process.getuid?.() === 0;
  const as = root ? ['runuser', '-u', 'postgres', '--'] : [];
  const run = (program, args) => {
    const [command, ...rest] = [...as, join(bin, program), ...args];
    return spawnSync(command, rest, { stdio: 'pipe', encoding: 'utf8' });
  };
  if (root) execFileSync('chown', ['postgres', dir]);
  const port = await freePort();
  const init = run('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  const start =
    init.status === 0 &&
    run('pg_ctl', [
      '-D',
      join(dir, 'data'),
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c synchronous_commit=off`,
      'start',
    ]);
  if (start?.status !== 0) {
    console.log(`test: PostgreSQL could not be started:\n${init.stderr ?? ''}${start?.stderr ?? ''}`);
    rmSync(dir, { recursive: true, force: true });
    return { url: null, failed: true, stop: () => {} };
  }
  console.log(`test: PostgreSQL (${bin}) on 127.0.0.1:${port}`);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    failed: false,
    stop: () => {
      run('pg_ctl', ['-D', join(dir, 'data'), '-m', 'immediate', 'stop']);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
