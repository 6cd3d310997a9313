/**
 * `service`: the framework commands run here; the developer commands (login, logout, whoami,
 * validate, dev, ssh) are handed to the developer CLI, so one name reaches both.
 */
import { CliError, INTERRUPTED, UNKNOWN_COMMAND } from './cli-error.js';
import {
  commandLine,
  globalFlagArgs,
  helpTakesOneCommand,
  takeGlobalFlags,
  unknownFirstWord,
} from './global-flags.js';
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

/**
 * Runs `service <argv>` and resolves to the exit code. The global flags (`--json`, `-h`/`--help`,
 * `-v`/`--version`) are read anywhere on the line and handed on to the developer CLI. Errors are
 * reported here: a `CliError` as its message on stderr, anything else as an unexpected error; with
 * `--json`, as one object on stdout in the developer CLI's shape (`{ "error": { "message",
 * "exitCode" } }`), so a script reading JSON always gets JSON from either CLI.
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const flags = takeGlobalFlags(argv);
  const [first, ...rest] = commandLine(flags);
  const fail = (message: string, exitCode: number, help?: string): number => {
    if (flags.json) io.stdout.write(`${JSON.stringify({ error: { message, exitCode } })}\n`);
    else io.stderr.write(`${message}\n${help ? `\n${help}` : ''}`);
    return exitCode;
  };
  if (first === 'help' && rest.length > 1)
    return fail(helpTakesOneCommand(rest[1]!), UNKNOWN_COMMAND, MAIN_HELP);
  if (first === 'help' && rest[0] !== undefined) return run([rest[0], '--help'], io);
  if (flags.version) {
    io.stdout.write(flags.json ? `${JSON.stringify({ version: VERSION })}\n` : `${VERSION}\n`);
    return 0;
  }
  if (first === undefined || first === 'help') {
    if (flags.help || first === 'help') {
      io.stdout.write(MAIN_HELP);
      return 0;
    }
    // `service` alone is a usage mistake, as in the developer CLI: the help, exit 2.
    if (flags.json) return fail('No command given. Run service --help to see them.', UNKNOWN_COMMAND);
    io.stdout.write(MAIN_HELP);
    return UNKNOWN_COMMAND;
  }
  if (DEVELOPER_COMMANDS.includes(first)) {
    const { runDeveloperCli } = await import('./developer-cli.js');
    return runDeveloperCli([first, ...globalFlagArgs(flags), ...rest], io);
  }
  const load = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
  if (!load) return fail(unknownFirstWord(first), UNKNOWN_COMMAND, MAIN_HELP);
  if (flags.help) {
    io.stdout.write(COMMAND_HELP[first]!);
    return 0;
  }
  const started = Date.now();
  let exitCode: number;
  try {
    exitCode = await (await load()).run(rest, flags.json ? { ...io, json: true } : io);
  } catch (error) {
    // As the developer CLI: the message, never a stack trace.
    if (error instanceof CliError) exitCode = fail(error.message, error.exitCode);
    // Ctrl+C or Ctrl+D at a prompt: the developer's own stop, so no message, and the exit
    // code of an interrupted command (128 + SIGINT), as the developer CLI answers it.
    else if ((error as { code?: unknown } | null)?.code === 'ABORT_ERR') {
      io.stderr.write('\n');
      exitCode = INTERRUPTED;
    } else
      exitCode = fail(
        `service ${first}: unexpected error: ${error instanceof Error ? error.message : String(error)}`,
        1,
      );
  }
  const { reportCommand } = await import('./telemetry.js');
  await reportCommand(io, { command: first, exitCode, durationMs: Date.now() - started });
  return exitCode;
}

export { CliError } from './cli-error.js';
export type { CliIo } from './io.js';
export { telemetryOptOut } from './telemetry.js';
export { VERSION } from './version.js';
