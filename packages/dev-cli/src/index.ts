import { CliError, USAGE } from './cli-error.js';
import { commandLine, helpTakesOneCommand, takeGlobalFlags, unknownFirstWord } from './global-flags.js';
import { COMMAND_HELP, MAIN_HELP } from './help.js';
import type { CliIo } from './io.js';
import { VERSION } from './version.js';

/** A command module: its `run` gets the arguments after the command name. */
export interface Command {
  run(args: string[], io: CliIo): Promise<number>;
}

/**
 * The subcommands, each loaded only when it runs, so `--version` and `--help` stay as fast as
 * Node's own start.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  login: () => import('./commands/login.js'),
  logout: () => import('./commands/logout.js'),
  whoami: () => import('./commands/whoami.js'),
  validate: () => import('./commands/validate.js'),
  dev: () => import('./commands/dev.js'),
  ssh: () => import('./commands/ssh.js'),
};

/**
 * Runs `service <argv>` and resolves to the exit code. Global flags (`--json`, `--help`,
 * `--version`) are read anywhere on the line. Errors are reported here: a `CliError` as its
 * message, anything else as an unexpected error; with `--json`, as one JSON object on stdout
 * (`{ "error": { "message", "exitCode" } }`), so a script reading JSON always gets JSON.
 *
 * @example
 * process.exitCode = await run(process.argv.slice(2), nodeIo());
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const flags = takeGlobalFlags(argv);
  const [first, ...rest] = commandLine(flags);
  const fail = (message: string, exitCode: number, help?: string): number => {
    if (flags.json) {
      io.stdout.write(`${JSON.stringify({ error: { message, exitCode } })}\n`);
    } else {
      io.stderr.write(`${message}\n`);
      if (help) io.stderr.write(`\n${help}`);
    }
    return exitCode;
  };
  if (first === 'help' && rest.length > 1) return fail(helpTakesOneCommand(rest[1]!), USAGE, MAIN_HELP);
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
    return flags.json ? fail('No command given. Run service --help to see them.', USAGE) : usage(io);
  }
  const load = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
  if (!load) return fail(unknownFirstWord(first), USAGE, MAIN_HELP);
  if (flags.help) {
    io.stdout.write(COMMAND_HELP[first]!);
    return 0;
  }
  try {
    const command = await load();
    return await command.run(rest, flags.json ? { ...io, json: true } : io);
  } catch (error) {
    if (error instanceof CliError) {
      return fail(error.message, error.exitCode, error.exitCode === USAGE ? COMMAND_HELP[first] : undefined);
    }
    return fail(`Unexpected error: ${error instanceof Error ? error.message : String(error)}`, 1);
  }
}

/** `service` alone: the help, as a usage mistake. */
function usage(io: CliIo): number {
  io.stdout.write(MAIN_HELP);
  return USAGE;
}

export { CliError } from './cli-error.js';
export {
  commandLine,
  type GlobalFlags,
  helpTakesOneCommand,
  takeGlobalFlags,
  unknownFirstWord,
} from './global-flags.js';
export type { CliIo } from './io.js';
export { currentFolder, quietOnBrokenPipe } from './node-io.js';
export { VERSION } from './version.js';
