/**
 * Runs the built `service` bin as a user does, in a folder, with a clean environment: telemetry
 * off unless a test turns it on, no CI variable, a throwaway HOME.
 */
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
export const PACKAGE = join(ROOT, 'packages/framework-cli');
export const BIN = join(PACKAGE, 'bin/service.js');
/** The suites run the built CLI (and host apps import the built core): `pnpm build` first. */
export const BUILT =
  existsSync(join(PACKAGE, 'dist/bin.js')) &&
  existsSync(join(ROOT, 'packages/core/dist/wire/index.js')) &&
  existsSync(join(ROOT, 'packages/express/dist/index.js')) &&
  existsSync(join(ROOT, 'packages/dev-cli/dist/bin.js'));
if (!BUILT) console.warn('packages/framework-cli/test skipped: run `pnpm build` first.');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: mkdtempSync(join(tmpdir(), 'svc-fcli-home-')),
    SERVICE_TELEMETRY_DISABLED: '1',
    NO_COLOR: '1',
    ...extra,
  };
}

export function runCli(
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: options.env ?? baseEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/**
 * `service <args>` run in this process: the `run` the bin calls (the built one, as the bin's), with
 * the streams a piped spawn has (no terminal, stdin at its end) and the exit code it would pass to
 * `process.exit`. A spawn costs a Node start and the CLI's load; most tests are about what a
 * command answers, not about the process, so they run it here. What only a process shows (the
 * exit code reaching the shell, a closed pipe) is still checked by tests that use `runCli`.
 */
export async function runInProcess(
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<CliRun> {
  const { run } = (await import(pathToFileURL(join(PACKAGE, 'dist/index.js')).href)) as {
    run: (argv: string[], io: unknown) => Promise<number>;
  };
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    stdout: {
      write: (text: string) => {
        stdout += text;
        return true;
      },
    },
    stderr: {
      write: (text: string) => {
        stderr += text;
        return true;
      },
    },
    stdin: Readable.from([]),
    env: options.env ?? baseEnv(),
    cwd: options.cwd,
    // The bin's terminal is its own; here a delegated developer command's output is piped back.
    inheritStdio: false,
  });
  return { code, stdout, stderr };
}

/** The real path of a package installed in one of the workspace's packages. */
export function installed(from: string, name: string): string {
  const link = join(ROOT, from, 'node_modules', name);
  const target = readlinkSync(link);
  return target.startsWith('/') ? target : join(dirname(link), target);
}

/**
 * A fresh app in a temp folder, its node_modules linked from the workspace the way a package
 * manager links them (no network): `@service/*`, the listed packages and `.bin/service`.
 */
export function createApp(
  pkg: Record<string, unknown>,
  links: Record<string, string>,
  parent: string = tmpdir(),
): string {
  const dir = mkdtempSync(join(parent, 'svc-fcli-app-'));
  mkdirSync(join(dir, 'node_modules/@service'), { recursive: true });
  mkdirSync(join(dir, 'node_modules/.bin'));
  for (const name of ['core', 'express', 'next', 'framework-cli']) {
    symlinkSync(join(ROOT, 'packages', name), join(dir, 'node_modules/@service', name));
  }
  for (const [name, target] of Object.entries(links)) {
    mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
    symlinkSync(target, join(dir, 'node_modules', name));
  }
  symlinkSync('../@service/framework-cli/bin/service.js', join(dir, 'node_modules/.bin/service'));
  writeJson(join(dir, 'package.json'), pkg);
  return dir;
}

export function writeJson(file: string, value: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

export function readJson<T = Record<string, unknown>>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}
