/**
 * The host app as the CLI sees it: which framework it uses, where the generated wiring lives,
 * `.service/config.json` (what init decided, read by sync, doctor and refine) and the `.env` file.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Overrides } from '@service/core/agent';
import { z } from 'zod';
import { CliError } from './cli-error.js';

export type Framework = 'next' | 'express';

export const CONFIG_PATH = '.service/config.json';
export const CATALOG_PATH = '.service/catalog.json';
export const OVERRIDES_PATH = '.service/overrides.json';
export const ENCRYPTION_KEY_VARIABLE = 'SERVICE_STORE_ENCRYPTION_KEY';
export const DEFAULT_APP_URL = 'http://localhost:3000';

export const configSchema = z.object({
  version: z.literal(1),
  framework: z.enum(['next', 'express']),
  /** The module exporting the host's tools (`tools`), relative to the app folder. */
  toolsModule: z.string().min(1),
  /** The module exporting the model (`model`), as the wiring imports it. */
  modelImport: z.string().min(1),
  /** Files init generated in the host source (the host's from then on). */
  wiring: z.array(z.string()),
  brief: z.string().optional(),
});
export type ServiceConfig = z.infer<typeof configSchema>;

/** The app folder a command names (the current one by default); one that is not there is refused. */
export function appDir(cwd: string, dir: string | undefined): string {
  // `service sync ''` (an unset variable): read as this folder, it would act on an app the line
  // never named.
  if (dir === '')
    throw new CliError("The folder named on the line is empty: name the app's folder, or leave it out.");
  const folder = resolve(cwd, dir ?? '.');
  if (!existsSync(folder)) throw new CliError(`No such folder: ${folder}`);
  if (!statSync(folder).isDirectory())
    throw new CliError(`${folder} is a file, not a folder: name the app's folder.`);
  return folder;
}

/** The app's `package.json`; null when there is none. One that is not a JSON object is refused. */
export function readPackageJson(dir: string): Record<string, unknown> | null {
  let text: string;
  try {
    text = readFileSync(join(dir, 'package.json'), 'utf8');
  } catch {
    return null;
  }
  const pkg = safeJson(text);
  if (pkg === undefined) throw new CliError(`package.json in ${dir} is not valid JSON: fix it first.`);
  if (!isObject(pkg)) throw new CliError(`package.json in ${dir} is not a JSON object: fix it first.`);
  return pkg;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The packages the app lists, as dependencies or development dependencies. */
export function dependenciesOf(pkg: Record<string, unknown> | null): Record<string, string> {
  return {
    ...((pkg?.dependencies as Record<string, string> | undefined) ?? {}),
    ...((pkg?.devDependencies as Record<string, string> | undefined) ?? {}),
  };
}

/** `next` is checked first and is also the fallback; `express` only when next is absent. */
export function detectFramework(pkg: Record<string, unknown> | null): Framework {
  const deps = dependenciesOf(pkg);
  if (Object.hasOwn(deps, 'next')) return 'next';
  if (Object.hasOwn(deps, 'express')) return 'express';
  return 'next';
}

/** The source root: `src/` when the app has one. */
export function sourceRoot(dir: string): string {
  return existsSync(join(dir, 'src')) ? 'src' : '';
}

export function readConfig(dir: string): ServiceConfig {
  let raw: string;
  try {
    raw = readFileSync(join(dir, CONFIG_PATH), 'utf8');
  } catch {
    const app = appAbove(dir);
    throw new CliError(
      app
        ? `No ${CONFIG_PATH} in ${dir}: the app is ${app}; run the command there, or pass the folder.`
        : `No ${CONFIG_PATH} in ${dir}: run \`service init\` first.`,
    );
  }
  const parsed = configSchema.safeParse(safeJson(raw));
  if (!parsed.success) {
    throw new CliError(`${CONFIG_PATH} is not valid: run \`service init --force\` to regenerate it.`);
  }
  return parsed.data;
}

/** The nearest folder above `dir` that init set up: where a command run from a subfolder meant. */
export function appAbove(dir: string): string | null {
  for (let folder = dirname(dir); folder !== dir; dir = folder, folder = dirname(folder)) {
    if (existsSync(join(folder, CONFIG_PATH))) return folder;
  }
  return null;
}

/**
 * `.service/overrides.json` as the app reads it at composition (its text and its members), or
 * undefined when there is none. A file the app refuses to start on (not JSON, or not the overrides
 * schema) is refused with the app's reason.
 */
export async function readOverrides(
  dir: string,
): Promise<{ text: string; overrides: Overrides } | undefined> {
  let text: string;
  try {
    text = readFileSync(join(dir, OVERRIDES_PATH), 'utf8');
  } catch {
    return undefined;
  }
  const raw = safeJson(text);
  const { overridesSchema } = await import('@service/core/agent');
  const parsed = overridesSchema.safeParse(raw);
  if (!parsed.success) {
    const { describeIssues } = await import('@service/core/http');
    const problem =
      raw === undefined ? 'not valid JSON' : describeIssues(parsed.error, { emptyPath: 'file', limit: 3 });
    throw new CliError(`${OVERRIDES_PATH}: ${problem}: the app refuses to start on it; fix or remove it.`);
  }
  return { text, overrides: parsed.data };
}

export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The `.env` file's variables (plain `NAME=value` lines; quotes stripped). */
export function readDotEnv(dir: string): Record<string, string> {
  let text = '';
  try {
    text = readFileSync(join(dir, '.env'), 'utf8');
  } catch {
    return {};
  }
  const vars: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) continue;
    vars[match[1]!] = match[2]!.trim().replace(/^(['"])(.*)\1$/, '$2');
  }
  return vars;
}

/**
 * What the store's sealing takes (core's `parseEncryptionKeys`, which its public entry does not
 * export): one or more comma-separated keys, each base64 of 32 bytes; several rotate.
 */
export function isEncryptionKey(value: string | undefined): boolean {
  const keys = (value ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  return keys.length > 0 && keys.every((key) => Buffer.from(key, 'base64').length === 32);
}

/** How configuration.md says to make a key. */
export const GENERATE_KEY_COMMAND = `node -e "console.log(require('crypto').randomBytes(32).toString('base64'))"`;

/**
 * The running app as configured: `--url`, else `SERVICE_URL` (environment, then `.env`). A blank
 * variable (`SERVICE_URL=` in a `.env` template) is unset, as the service reads its own variables.
 */
export function configuredAppUrl(
  dir: string,
  env: Record<string, string | undefined>,
  flag?: string,
): string | undefined {
  const set = (value: string | undefined) => (value?.trim() ? value.trim() : undefined);
  return flag ?? set(env.SERVICE_URL) ?? set(readDotEnv(dir).SERVICE_URL);
}

/** Where the wire is mounted on the app: the commands append its routes to the app's URL. */
export const WIRE_PATH = '/api/service';

/** The running app: as configured, else localhost:3000; refuses anything but http(s). */
export function appUrl(dir: string, env: Record<string, string | undefined>, flag?: string): string {
  const url = configuredAppUrl(dir, env, flag) ?? DEFAULT_APP_URL;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`Not an http(s) URL: ${url}`);
  }
  // Credentials in it would be printed with every line naming the URL (and `fetch` refuses them):
  // said without them.
  if (parsed.username || parsed.password) {
    parsed.username = '';
    parsed.password = '';
    throw new CliError(
      `Not the app's base URL: it has a user name or password in it, which the commands never send; give ${parsed.href.replace(/\/+$/, '')}.`,
    );
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new CliError(`Not an http(s) URL: ${url}`);
  // The wire's paths are appended to it: a query or fragment would swallow them.
  if (/[?#]/.test(url))
    throw new CliError(`Not the app's base URL: ${url} has a query or fragment; leave it out.`);
  const base = url.replace(/\/+$/, '');
  // `SERVICE_URL=http://localhost:3000/api/service` would ask /api/service/api/service/status.
  if (base.endsWith(WIRE_PATH))
    throw new CliError(
      `Not the app's base URL: ${url} ends with the wire's path ${WIRE_PATH}, which the commands add: give ${base.slice(0, -WIRE_PATH.length)}.`,
    );
  return base;
}

/** A package's package.json as Node finds it from the app folder (node_modules upward), or null. */
export function installedPackage(dir: string, name: string): Record<string, unknown> | null {
  for (let at = dir; ; at = dirname(at)) {
    const file = join(at, 'node_modules', name, 'package.json');
    if (existsSync(file)) {
      const pkg = safeJson(readFileSync(file, 'utf8'));
      return isObject(pkg) ? pkg : null;
    }
    if (dirname(at) === at) return null;
  }
}

/**
 * What a Next.js app below 16 must leave outside its webpack server bundle: bundled, PGlite's
 * `readFile(new URL(..., import.meta.url))` gets a URL webpack rewrote and the store never opens
 * (every wire request answers 503). Under pnpm naming PGlite alone is not enough: core, which
 * imports it, must stay external too. Turbopack (Next.js 16) needs neither.
 */
export const NEXT_EXTERNAL_PACKAGES = ['@service/core', '@electric-sql/pglite'] as const;

/** The app's Next.js major: the installed one, else the one package.json lists; null when unknown. */
export function nextMajor(dir: string, pkg: Record<string, unknown> | null): number | null {
  const version = String(installedPackage(dir, 'next')?.version ?? dependenciesOf(pkg).next ?? '');
  const major = /^\D*(\d+)/.exec(version)?.[1];
  return major === undefined ? null : Number(major);
}

/** The Next.js config files, in the order Next.js looks for them. */
const NEXT_CONFIG_FILES = ['next.config.js', 'next.config.mjs', 'next.config.ts', 'next.config.mts'];

export function nextConfigFile(dir: string): string | null {
  return NEXT_CONFIG_FILES.find((file) => existsSync(join(dir, file))) ?? null;
}

/** The setting that keeps them external (Next.js 14 named it under `experimental`). */
export function nextExternalsSetting(major: number): string {
  const list = `[${NEXT_EXTERNAL_PACKAGES.map((name) => `'${name}'`).join(', ')}]`;
  return major < 15
    ? `experimental: { serverComponentsExternalPackages: ${list} }`
    : `serverExternalPackages: ${list}`;
}

/** Whether a Next.js config names every package that must stay external. */
export function keepsExternals(source: string): boolean {
  return NEXT_EXTERNAL_PACKAGES.every((name) => source.includes(`'${name}'`) || source.includes(`"${name}"`));
}

/** The config init writes for a Next.js app below 16 that has none. */
export function nextConfigModule(major: number): string {
  return `// Next.js below 16 bundles server code with webpack, which breaks how the service's store
// (PGlite) loads its files: these packages stay outside the bundle.
/** @type {import('next').NextConfig} */
const nextConfig = {
  ${nextExternalsSetting(major)},
};

export default nextConfig;
`;
}

/** How the app adds a package: by the lockfile nearest the app folder (a workspace's is above it). */
export function addCommand(dir: string, spec: string): string {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'pnpm-lock.yaml'))) return `pnpm add ${spec}`;
    if (existsSync(join(at, 'yarn.lock'))) return `yarn add ${spec}`;
    if (existsSync(join(at, 'package-lock.json')) || dirname(at) === at) return `npm install ${spec}`;
  }
}
