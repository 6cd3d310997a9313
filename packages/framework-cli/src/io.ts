import { homedir } from 'node:os';

export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * Everything a command touches outside itself. The bin passes the real process; tests pass their
 * own streams, environment and folders, so commands run in-process against real servers.
 */
export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
  cwd: string;
  /** True in the bin: a delegated developer command then shares this process's terminal. */
  inheritStdio?: boolean;
  /** `--json` was given (anywhere on the line): the command prints one JSON object on stdout. */
  json?: boolean;
}

/** `${HOME}/.service`: where the telemetry opt-out lives. */
export function serviceHome(io: CliIo): string {
  return `${io.env.HOME?.trim() || homedir()}/.service`;
}

/** A prompt may be shown only when both ends are a terminal. */
export function interactive(io: CliIo): boolean {
  return io.stdin.isTTY === true && io.stdout.isTTY === true;
}

/** Asks a yes/no question on the terminal; anything but y/yes is no. */
export async function confirm(io: CliIo, question: string): Promise<boolean> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: io.stdin, output: io.stdout as NodeJS.WritableStream });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
