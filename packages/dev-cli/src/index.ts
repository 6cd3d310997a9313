import { CliError, USAGE } from './cli-error.js';
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
 * Runs `service <argv>` and resolves to the exit code. Errors are reported here: a `CliError`
 * as its message, anything else as an unexpected error.
 *
 * @example
 * process.exitCode = await run(process.argv.slice(2), nodeIo());
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  if (first === 'help' && rest[0] !== undefined) return run([rest[0], '--help'], io);
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    io.stdout.write(MAIN_HELP);
    return first === undefined ? USAGE : 0;
  }
  if (first === '-v' || first === '--version') {
    io.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const load = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
  if (!load) {
    io.stderr.write(`Unknown command: ${first}\n\n`);
    io.stderr.write(MAIN_HELP);
    return USAGE;
  }
  if (rest.includes('-h') || rest.includes('--help')) {
    io.stdout.write(COMMAND_HELP[first]!);
    return 0;
  }
  try {
    const command = await load();
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`${error.message}\n`);
      if (error.exitCode === USAGE) io.stderr.write(`\n${COMMAND_HELP[first]}`);
      return error.exitCode;
    }
    io.stderr.write(`Unexpected error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

export { CliError } from './cli-error.js';
export type { CliIo } from './io.js';
export { VERSION } from './version.js';
