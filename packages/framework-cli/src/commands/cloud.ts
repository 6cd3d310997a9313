/** `service cloud …`: answered, not unknown, until the cloud commands exist. */
import { CliError } from '../cli-error.js';

export async function run(args: string[]): Promise<number> {
  const sub = args.find((a) => !a.startsWith('-'));
  throw new CliError(
    `service cloud${sub ? ` ${sub}` : ''}: the cloud commands are not available in this version.`,
  );
}
