/**
 * Loads a module of the host app (its tools, its model) the way the app itself would: TypeScript
 * through tsx, with the app's tsconfig (so `@/…` paths resolve) and its own node_modules.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CliError } from './cli-error.js';

const EXTENSIONS = ['.ts', '.tsx', '.mts', '.js', '.mjs'];

/** The file a specifier names, or null: relative to `from`, or `@/x` under the app's source root. */
export function resolveHostFile(dir: string, specifier: string, from: string): string | null {
  let base: string;
  if (specifier.startsWith('@/')) {
    const root = existsSync(join(dir, 'src')) ? join(dir, 'src') : dir;
    base = join(root, specifier.slice(2));
  } else if (specifier.startsWith('.') || isAbsolute(specifier)) {
    base = resolve(from, specifier);
  } else {
    return null;
  }
  const candidates = [
    base,
    ...EXTENSIONS.map((ext) => base + ext),
    ...EXTENSIONS.map((ext) => join(base, `index${ext}`)),
  ];
  return (
    candidates.find(
      (file) => EXTENSIONS.some((ext) => file.endsWith(ext)) && existsSync(file) && statSync(file).isFile(),
    ) ?? null
  );
}

export async function importHostModule(dir: string, file: string): Promise<Record<string, unknown>> {
  const { tsImport } = await import('tsx/esm/api');
  const tsconfig = join(dir, 'tsconfig.json');
  try {
    return (await tsImport(pathToFileURL(file).href, {
      parentURL: pathToFileURL(join(dirname(file), 'x.js')).href,
      ...(existsSync(tsconfig) ? { tsconfig } : {}),
    })) as Record<string, unknown>;
  } catch (error) {
    throw new CliError(`Could not load ${file}: ${(error as Error).message}`);
  }
}
