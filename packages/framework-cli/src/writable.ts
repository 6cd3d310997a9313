/**
 * Checks a command makes before it writes a file the developer named, so a path that cannot take
 * it is refused in one line before anything is written (not Node's `ENOTDIR: not a directory,
 * open …` once half of the command's files are down).
 */
import { existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Why `file` cannot be written, or null: a folder on its path that is a file, a folder where the
 * file goes, or (unless the command creates its folders) a folder that is not there.
 */
export function unwritable(file: string, options: { createsFolders: boolean }): string | null {
  const folders: string[] = [];
  for (let at = dirname(file); dirname(at) !== at; at = dirname(at)) folders.unshift(at);
  for (const folder of folders) {
    if (!existsSync(folder)) {
      return options.createsFolders ? null : `the folder ${folder} does not exist`;
    }
    if (!statSync(folder).isDirectory()) return `${folder} is a file, not a folder`;
  }
  if (existsSync(file) && statSync(file).isDirectory()) return `${file} is a folder`;
  return null;
}

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  ENOTDIR: 'a folder on its path is a file',
  ENOENT: 'a folder on its path does not exist',
  EISDIR: 'it is a folder',
  EEXIST: 'it exists',
};

/** A failed write's reason in words, for a one-line message (its code when it has no words here). */
export function writeFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return (code && REASONS[code]) ?? code ?? (error as Error).message;
}
