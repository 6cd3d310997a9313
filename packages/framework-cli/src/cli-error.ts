/**
 * An error the CLI reports as one line on stderr and an exit code (1 unless said otherwise):
 * the developer CLI's, so one thrown by its helpers (the current folder gone, say) reads alike.
 * Anything else that escapes a command is a bug and is reported as such.
 */
export { CliError } from '@service/dev-cli';

/** Exit code of an unknown command (the developer CLI's too, so both read alike). */
export const UNKNOWN_COMMAND = 2;

/** Exit code of a command stopped with Ctrl+C (128 + SIGINT), as shells and the developer CLI report it. */
export const INTERRUPTED = 130;
