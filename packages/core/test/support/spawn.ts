import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** tsx's loader by absolute URL, so a child process finds it from any working folder. */
export const TSX_LOADER = (() => {
  const manifest = createRequire(join(ROOT, 'package.json')).resolve('tsx/package.json');
  const { exports } = JSON.parse(readFileSync(manifest, 'utf8')) as { exports: { '.': string } };
  return pathToFileURL(join(dirname(manifest), exports['.'])).href;
})();

export interface ChildServer {
  url: string;
  child: ChildProcess;
  /** Kills the process with SIGKILL (no shutdown of any kind) and waits for it to be gone. */
  kill(): Promise<void>;
}

/** Starts `platform-process.ts` with the given environment and waits until it listens. */
export async function spawnPlatform(env: Record<string, string>): Promise<ChildServer> {
  const script = fileURLToPath(new URL('./platform-process.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', TSX_LOADER, script], {
    env: { ...process.env, ...env, TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const deadline = Date.now() + 30_000;
  let match = output.match(/listening (\S+)/);
  while (!match) {
    if (child.exitCode !== null) throw new Error(`platform process exited:\n${output}`);
    if (Date.now() > deadline) throw new Error(`platform process did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    match = output.match(/listening (\S+)/);
  }
  return {
    url: match[1]!,
    child,
    kill: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
