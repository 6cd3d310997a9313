/**
 * An error the CLI reports as one line on stderr and an exit code: 1 for a failure, 2 for a usage
 * mistake. Anything else that escapes a command is a bug and is reported as such.
 */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode = 1,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A failed file or network call in a message: its system code (`EACCES`), else its message. */
export function systemReason(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}

/** Exit code of a usage mistake (unknown command or option, missing argument). */
export const USAGE = 2;
