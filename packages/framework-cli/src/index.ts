/**
 * `service`: the framework commands run here; the developer commands (login, logout, whoami,
 * validate, dev, ssh) are handed to the developer CLI, so one name reaches both.
 */
import { CliError, UNKNOWN_COMMAND } from './cli-error.js';
import { COMMAND_HELP, MAIN_HELP } from './help.js';
import type { CliIo } from './io.js';
import { VERSION } from './version.js';

export interface Command {
  run(args: string[], io: CliIo): Promise<number>;
}

/** Each command is loaded only when it runs, so `--version` and `--help` stay fast. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  init: () => import('./commands/init.js'),
  sync: () => import('./commands/sync.js'),
  doctor: () => import('./commands/doctor.js'),
  refine: () => import('./commands/refine.js'),
  mcp: () => import('./commands/mcp.js'),
  cloud: () => import('./commands/cloud.js'),
};

const DEVELOPER_COMMANDS = ['login', 'logout', 'whoami', 'validate', 'dev', 'ssh'];

export async function run(argv: string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    if (first === 'help' && rest[0] !== undefined) return run([rest[0], '--help'], io);
    io.stdout.write(MAIN_HELP);
    return 0;
  }
  if (first === '-v' || first === '--version') {
    io.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (DEVELOPER_COMMANDS.includes(first)) {
    const { runDeveloperCli } = await import('./developer-cli.js');
    return runDeveloperCli(argv, io);
  }
  const load = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
  if (!load) {
    io.stderr.write(`Unknown command: ${first}\n\n${MAIN_HELP}`);
    return UNKNOWN_COMMAND;
  }
  if (rest.includes('-h') || rest.includes('--help')) {
    io.stdout.write(COMMAND_HELP[first]!);
    return 0;
  }
  const started = Date.now();
  let exitCode: number;
  try {
    exitCode = await (await load()).run(rest, io);
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`${error.message}\n`);
      exitCode = error.exitCode;
    } else {
      io.stderr.write(`service ${first}: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`);
      exitCode = 1;
    }
  }
  const { reportCommand } = await import('./telemetry.js');
  await reportCommand(io, { command: first, exitCode, durationMs: Date.now() - started });
  return exitCode;
}

export { CliError } from './cli-error.js';
export type { CliIo } from './io.js';
export { telemetryOptOut } from './telemetry.js';
export { VERSION } from './version.js';
