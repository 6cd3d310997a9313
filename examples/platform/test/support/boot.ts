import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TSX_LOADER } from '../../../../packages/core/test/support/spawn.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const MAIN = join(ROOT, 'examples/platform/src/main.ts');

export interface PlatformProcess {
  child: ChildProcess;
  /** Everything the process printed so far, stdout and stderr. */
  output(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Runs the platform as `pnpm start` does (workspace packages from source), in `cwd`, with the
 * variables a developer's shell could leak in removed. Does not wait for it to be ready.
 */
export function spawnPlatform(
  cwd: string,
  env: Record<string, string>,
  { underShell = false }: { underShell?: boolean } = {},
): PlatformProcess {
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    ...env,
    TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json'),
  };
  for (const name of ['DATABASE_URL', 'SERVICE_BASE_URL', 'SERVICE_IDP_URL', 'NODE_ENV']) {
    if (!(name in env)) delete childEnv[name];
  }
  const command = [process.execPath, '--import', TSX_LOADER, MAIN];
  // As a package script runs it: a shell that waits for it (`; true` keeps the shell from
  // replacing itself with the platform), so `child` is the shell.
  const [file, ...args] = underShell
    ? ['sh', '-c', `${command.map((part) => `'${part}'`).join(' ')}; true`]
    : command;
  const child = spawn(file!, args, {
    // Its own process group under a shell, so a test can end whatever the shell left behind.
    detached: underShell,
    cwd,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  return {
    child,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}

/**
 * `spawnPlatform`, then waits (a minute at most) until it prints that it is ready: `Platform ready`
 * (the demo seeded), or `readyText` (another instance on a store seeded before: its `listening` log).
 */
export async function bootPlatform(
  cwd: string,
  env: Record<string, string>,
  readyText = 'Platform ready',
  options: { underShell?: boolean } = {},
): Promise<PlatformProcess> {
  const started = spawnPlatform(cwd, env, options);
  const deadline = Date.now() + 60_000;
  while (!started.output().includes(readyText)) {
    if (started.child.exitCode !== null) throw new Error(`platform exited early:\n${started.output()}`);
    if (Date.now() > deadline) {
      // Not left running: a platform still booting would hold the port and the data folder, and
      // fail every later test on them too.
      if (options.underShell) process.kill(-started.child.pid!, 'SIGKILL');
      else started.child.kill('SIGKILL');
      throw new Error(`platform did not start:\n${started.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return started;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
