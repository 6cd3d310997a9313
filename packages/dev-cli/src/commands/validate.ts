import { readFile } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import { parseCommandArgs } from '../args.js';
import { CliError, USAGE } from '../cli-error.js';
import { type CliIo, printable, styles } from '../io.js';
import { checkManifest } from '../manifest.js';

/**
 * `service validate [file]`: checks a deploy manifest and lists every problem as
 * `file:line:column  path: message`. Exit 0 when valid, 1 when not or when the file is missing.
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseCommandArgs(args, {}, 1);
  const file = positionals[0] ?? 'service.yaml';
  // An empty word (`service validate ''`, an unset variable) would resolve to this folder and be
  // answered as "is a folder", naming a path the developer never typed.
  if (file === '') throw new CliError('The manifest path is empty: service validate [file]', USAGE);
  const path = isAbsolute(file) ? file : resolve(io.cwd, file);
  // As the user can find it: relative when the file is under this folder, else as given.
  const below = relative(io.cwd, path);
  const shown = below && !below.startsWith('..') && !isAbsolute(below) ? below : file;
  let source: string;
  try {
    source = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const message =
      code === 'ENOENT'
        ? `No such file: ${shown}`
        : code === 'EISDIR'
          ? `${shown} is a folder: name the manifest file in it (service validate ${shown}/service.yaml)`
          : `Could not read ${shown}: ${(error as Error).message}`;
    if (!io.json) throw new CliError(message);
    // A script reading --json gets JSON whatever happened.
    io.stdout.write(
      `${JSON.stringify({ file: shown, valid: false, errors: [{ path: '', message, line: null, column: null }] })}\n`,
    );
    return 1;
  }
  const result = checkManifest(source);
  if (io.json) {
    // Every error has the same four fields: null where a problem has no place in the file (a
    // required key that is missing).
    const errors = result.ok
      ? []
      : result.problems.map((problem) => ({
          path: problem.path,
          message: problem.message,
          line: problem.line ?? null,
          column: problem.column ?? null,
        }));
    io.stdout.write(`${JSON.stringify({ file: shown, valid: result.ok, errors })}\n`);
    return result.ok ? 0 : 1;
  }
  const style = styles(io);
  if (result.ok) {
    io.stdout.write(
      `${style.green('✓')} ${shown} is valid (${result.manifest.name}, runtime ${result.manifest.runtime}).\n`,
    );
    return 0;
  }
  const count = result.problems.length;
  io.stdout.write(`${style.red('✗')} ${shown}: ${count} problem${count === 1 ? '' : 's'}\n`);
  for (const problem of result.problems) {
    const where = problem.line ? `${shown}:${problem.line}:${problem.column}` : shown;
    // Paths and messages quote the file's keys and values, and the file may come from anyone's
    // repository: its escape sequences are shown, not run by the terminal.
    const path = problem.path ? `${style.bold(printable(problem.path))}: ` : '';
    io.stdout.write(`  ${style.dim(where)}  ${path}${printable(problem.message)}\n`);
  }
  return 1;
}
