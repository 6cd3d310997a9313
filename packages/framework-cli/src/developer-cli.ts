/**
 * The developer commands, run by the developer CLI's own bin in a child process: it keeps its
 * terminal handling (ssh's raw mode) and its exit code; of its code, only the broken-pipe helper
 * is imported here (by the bin).
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CliIo } from './io.js';

export async function runDeveloperCli(argv: string[], io: CliIo): Promise<number> {
  const entry = fileURLToPath(import.meta.resolve('@service/dev-cli'));
  const bin = join(dirname(entry), 'bin.js');
  const child = spawn(process.execPath, [bin, ...argv], {
    cwd: io.cwd,
    env: io.env as NodeJS.ProcessEnv,
    stdio: io.inheritStdio ? 'inherit' : ['pipe', 'pipe', 'pipe'],
  });
  if (!io.inheritStdio) {
    child.stdin?.end();
    child.stdout?.on('data', (chunk: Buffer) => io.stdout.write(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => io.stderr.write(chunk.toString()));
  }
  return new Promise((resolve) => {
    child.on('error', (error) => {
      io.stderr.write(`service ${argv[0]}: the developer CLI could not start: ${error.message}\n`);
      resolve(1);
    });
    child.on('close', (code) => resolve(code ?? 1));
  });
}
