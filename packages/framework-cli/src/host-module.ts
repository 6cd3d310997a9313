/**
 * Loads a module of the host app (its tools, its model) the way its bundler would: the app's own
 * files (TypeScript, `@/…` paths of its tsconfig) bundled by esbuild into one ES module under
 * `.service/data/cli/`, its packages imported from the app's node_modules with the `import`
 * condition. So a Next.js app's CommonJS-typed package loads ES-only packages as Next does.
 */
import { Console } from 'node:console';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CliError } from './cli-error.js';
import { addCommand } from './project.js';
import { AI_RANGE } from './templates.js';

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
  // `./ai.js` names `ai.ts` as TypeScript (and esbuild) read it: the way an app that Node runs
  // after tsc writes its imports.
  const typed = base.replace(/\.([cm]?)js(x?)$/, '.$1ts$2');
  const candidates = [
    base,
    ...(typed === base ? [] : [typed, ...(typed.endsWith('.ts') ? [`${typed}x`] : [])]),
    ...EXTENSIONS.map((ext) => base + ext),
    ...EXTENSIONS.map((ext) => join(base, `index${ext}`)),
  ];
  return (
    candidates.find(
      (file) => EXTENSIONS.some((ext) => file.endsWith(ext)) && existsSync(file) && statSync(file).isFile(),
    ) ?? null
  );
}

/** Whether a specifier names a package (`my-models`, `@acme/ai/model`) rather than a file of the app. */
export function isPackageSpecifier(specifier: string): boolean {
  return !specifier.startsWith('@/') && !specifier.startsWith('.') && !isAbsolute(specifier);
}

/**
 * The folder of the package a bare specifier names, or null: looked up as Node looks it up, in
 * `node_modules` from the app's folder upwards (a workspace's hoisted packages included).
 */
export function hostPackageDir(dir: string, specifier: string): string | null {
  const parts = specifier.split('/');
  const name = (specifier.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/');
  for (let at = resolve(dir); ; at = dirname(at)) {
    const candidate = join(at, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dirname(at) === at) return null;
  }
}

/** Where a loaded host module's ES module goes: inside the app, so its package imports resolve from the app's node_modules. */
function cliModuleFile(dir: string, key: string): string {
  return join(dir, '.service/data/cli', `${createHash('sha256').update(key).digest('hex').slice(0, 12)}.mjs`);
}

/**
 * A package of the app (its model module may be one), imported as the app's bundler would: by
 * its specifier from a module inside the app, so Node picks its `import` entry from the app's
 * node_modules.
 */
export async function importHostPackage(dir: string, specifier: string): Promise<Record<string, unknown>> {
  const outfile = cliModuleFile(dir, `package:${specifier}`);
  mkdirSync(dirname(outfile), { recursive: true });
  writeFileSync(outfile, `export * as namespace from ${JSON.stringify(specifier)};\n`);
  const loaded = await loadHostModule(dir, specifier, outfile);
  return loaded.namespace as Record<string, unknown>;
}

export async function importHostModule(dir: string, file: string): Promise<Record<string, unknown>> {
  const { build } = await import('esbuild');
  const tsconfig = join(dir, 'tsconfig.json');
  const outfile = cliModuleFile(dir, file);
  try {
    await build({
      entryPoints: [file],
      outfile,
      bundle: true,
      packages: 'external',
      format: 'esm',
      platform: 'node',
      target: 'node20',
      jsx: 'automatic',
      logLevel: 'silent',
      ...(existsSync(tsconfig) ? { tsconfig } : {}),
    });
  } catch (error) {
    throw new CliError(`Could not load ${file}: ${(error as Error).message}`);
  }
  return loadHostModule(dir, file, outfile);
}

/** Imports a module written under `.service/data/cli/`; `name` is what a failure names. */
async function loadHostModule(dir: string, name: string, outfile: string): Promise<Record<string, unknown>> {
  consoleToStderr();
  try {
    return await withoutExit(() =>
      withinLoadLimit(import(`${pathToFileURL(outfile).href}?at=${Date.now()}`)),
    );
  } catch (error) {
    const missing = missingPackage(error);
    if (missing !== null) {
      // Node names the bundle under .service/data/cli/ as the importer, a file the developer never
      // wrote: what they need is the package's name and the line that installs it.
      const shown = isAbsolute(name) ? relative(dir, name) : name;
      const spec = missing === 'ai' ? `ai@${AI_RANGE}` : missing;
      throw new CliError(
        `Could not load ${shown}: it needs the package ${missing}, which is not installed in the app: run \`${addCommand(dir, spec)}\`.`,
      );
    }
    throw new CliError(`Could not load ${name}: ${(error as Error).message}`);
  }
}

/** The package a failed import could not find (Node's ERR_MODULE_NOT_FOUND for a bare name), or null. */
function missingPackage(error: unknown): string | null {
  if ((error as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') return null;
  return /^Cannot find package '([^']+)'/.exec((error as Error).message)?.[1] ?? null;
}

/**
 * From the first host module on, the process's console writes to stderr: the app's code runs in
 * this process (its top level, timers, the model refine calls), and a `console.log('connecting…')`
 * of it must not land in the command's stdout, which `--json` promises is one object. The
 * commands write through their `io`, never the console, so only the host's output moves.
 */
function consoleToStderr(): void {
  globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr });
}

/**
 * Runs `load` with `process.exit` refused: a module that calls it as it loads would else end the
 * command with the module's exit code (0 too), printing nothing and writing nothing.
 */
async function withoutExit<T>(load: () => Promise<T>): Promise<T> {
  const exit = process.exit;
  process.exit = ((code?: number | string | null) => {
    throw new Error(`it called process.exit(${code ?? ''}) while loading`);
  }) as typeof process.exit;
  try {
    return await load();
  } finally {
    process.exit = exit;
  }
}

/** How long a host module may take to load (its top-level code and awaits). */
const LOAD_LIMIT_MS = 10_000;

/**
 * The module once loaded, or a failure past the limit: a top-level await that never settles
 * would else hang the command, or, with nothing else pending, end it silently (Node's exit 13).
 */
async function withinLoadLimit(loading: Promise<unknown>): Promise<Record<string, unknown>> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `it did not finish loading within ${LOAD_LIMIT_MS / 1000} s (a top-level await that never settles?)`,
          ),
        ),
      LOAD_LIMIT_MS,
    );
  });
  try {
    return (await Promise.race([loading, limit])) as Record<string, unknown>;
  } finally {
    clearTimeout(timer);
  }
}
