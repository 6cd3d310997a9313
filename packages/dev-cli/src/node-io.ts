import { spawn } from 'node:child_process';
import { CliError } from './cli-error.js';
import type { CliIo } from './io.js';

/** The real process as the CLI's io. */
export function nodeIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    // Read when a command needs it: a shell still in a removed folder can run --version, and the
    // commands that need the folder say what is wrong instead of dying with a stack trace.
    get cwd() {
      return currentFolder();
    },
    openUrl,
  };
}

/**
 * The current folder, or a `CliError` saying what to do when it cannot be read (removed while a
 * shell was still in it).
 */
export function currentFolder(): string {
  try {
    return process.cwd();
  } catch (error) {
    throw new CliError(
      (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'The current folder no longer exists (removed or moved away): cd to a folder and run the command again.'
        : `Could not read the current folder: ${(error as Error).message}`,
      1,
      { cause: error },
    );
  }
}

/**
 * Opens a URL with the platform's opener. Resolves false when there is none (a server, a
 * container), in which case the printed URL is the way in.
 */
function openUrl(url: string): Promise<boolean> {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]]
        : ['xdg-open', [url]];
  return new Promise((resolve) => {
    try {
      const child = spawn(command, args, { stdio: 'ignore', detached: true });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    } catch {
      resolve(false);
    }
  });
}

/**
 * A reader that stops early (`service validate | head -1`) closes the pipe under us: like `git`
 * and `gh`, stop quietly instead of dying with a stack trace of the failed write. The exit code
 * stays the command's own: when the pipe closes before the command has an outcome (output
 * printed as it goes: an ssh shell's, a doctor's checks), the rest of its output is dropped and
 * the process ends with the code the command returns, never a 0 it did not earn.
 */
export function quietOnBrokenPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      if (process.exitCode !== undefined) process.exit(process.exitCode);
    });
  }
}
