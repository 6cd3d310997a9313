/**
 * The developer commands, run by the developer CLI's own bin in a child process: it keeps its
 * terminal handling (ssh's raw mode) and its exit code; of its code, only the broken-pipe helper
 * is imported here (by the bin).
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CliIo } from './io.js';

export async function runDeveloperCli(argv: string[], io: CliIo): Promise<number> {
  const entry = fileURLToPath(import.meta.resolve('@service/dev-cli'));
  const bin = join(dirname(entry), 'bin.js');
  const child = spawn(process.execPath, [bin, ...argv], {
    // A folder that cannot be read (removed) is left to the developer CLI, which says so.
    cwd: readableCwd(io),
    env: io.env as NodeJS.ProcessEnv,
    stdio: io.inheritStdio ? 'inherit' : ['pipe', 'pipe', 'pipe'],
  });
  if (!io.inheritStdio) {
    child.stdin?.end();
    child.stdout?.on('data', (chunk: Buffer) => io.stdout.write(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => io.stderr.write(chunk.toString()));
  }
  // A signal to this process alone (a supervisor's SIGTERM, `kill` of its pid) reaches the
  // command too, which stops as it would on its own and gives its exit code; else it would run on
  // orphaned, holding its port and the terminal. (Ctrl+C at a terminal signals both already.)
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  const signals: NodeJS.Signals[] = io.inheritStdio ? ['SIGINT', 'SIGTERM', 'SIGHUP'] : [];
  for (const signal of signals) process.on(signal, forward);
  return new Promise((resolve) => {
    const done = (code: number) => {
      for (const signal of signals) process.off(signal, forward);
      resolve(code);
    };
    child.on('error', (error) => {
      io.stderr.write(`service ${argv[0]}: the developer CLI could not start: ${error.message}\n`);
      done(1);
    });
    child.on('close', (code, signal) => done(code ?? (signal ? 128 + (osSignals[signal] ?? 0) : 1)));
  });
}

function readableCwd(io: CliIo): string | undefined {
  try {
    return io.cwd;
  } catch {
    return undefined;
  }
}

const osSignals: Partial<Record<NodeJS.Signals, number>> = constants.signals;
