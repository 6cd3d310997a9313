import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { CliError, systemReason, USAGE } from './cli-error.js';
import { type CliIo, serviceDir } from './io.js';

/**
 * `${HOME}/.service/config.json`: written by `login`, read by every other command. Environment
 * API keys are never consulted: the file is the only source of the key.
 */
export interface CliConfig {
  apiBase: string;
  /** A long-lived `service_sk_*` CLI key scoped to the tenant. */
  apiKey: string;
  tenantId: string;
  appId: string | null;
  issuedToEmail: string | null;
  /** ISO 8601. */
  issuedAt: string;
}

/** Where the platform is when neither `--api-base` nor a stored config says. */
export const DEFAULT_API_BASE = 'http://localhost:8787';

export const configPath = (io: CliIo) => `${serviceDir(io)}/config.json`;

/** The config file is there but unusable (not JSON, fields missing). */
export class DamagedConfigError extends CliError {
  constructor(
    readonly path: string,
    readonly problem: string,
    fix = 'Run service login to write it again.',
  ) {
    super(`${path} ${problem}. ${fix}`);
  }
}

/**
 * What a logout of earlier versions left: the platform URL only. Logout now removes the file, but
 * one of these may still be on a machine: it holds no key, so every command reads it as logged out.
 */
interface LoggedOutConfig {
  apiBase: string;
}

const isLoggedOut = (value: unknown): value is LoggedOutConfig =>
  value !== null &&
  typeof value === 'object' &&
  typeof (value as { apiBase?: unknown }).apiBase === 'string' &&
  !('apiKey' in value);

/**
 * The platform URL of the stored config (or of an earlier version's logout), in the form
 * `--api-base` takes, or null when there is none. One breaking the `--api-base` rule is an error
 * naming the file: the login is not sent there, nor quietly sent elsewhere.
 */
export async function storedApiBase(io: CliIo): Promise<string | null> {
  const path = configPath(io);
  let apiBase: unknown;
  try {
    apiBase = (JSON.parse(await readFile(path, 'utf8')) as { apiBase?: unknown } | null)?.apiBase;
  } catch {
    // No file, or one login is about to write again.
    return null;
  }
  if (typeof apiBase !== 'string' || apiBase === '') return null;
  return storedPlatformUrl(path, apiBase, 'Pass --api-base <url> to log in to the right platform.');
}

/** A stored `apiBase` held to the `--api-base` rule and written as it writes one, or the error naming the file. */
function storedPlatformUrl(path: string, apiBase: string, fix?: string): string {
  const problem = apiBaseProblem(apiBase);
  if (problem) throw new DamagedConfigError(path, `has an apiBase that ${STORED_PROBLEMS[problem]}`, fix);
  return normalApiBase(apiBase);
}

/** The stored config, or null when there is none. A damaged file is an error naming it. */
export async function readConfig(io: CliIo): Promise<CliConfig | null> {
  const path = configPath(io);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CliError(`Could not read ${path}: ${(error as Error).message}`);
  }
  let value: Partial<CliConfig>;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DamagedConfigError(path, 'is not valid JSON');
  }
  if (isLoggedOut(value)) return null;
  if (typeof value?.apiKey === 'string' && value.apiKey.trim() === '') {
    // Never a reason to look elsewhere for a key: an empty one is a broken file.
    throw new DamagedConfigError(path, 'has an empty apiKey');
  }
  if (
    typeof value?.apiKey !== 'string' ||
    typeof value.apiBase !== 'string' ||
    typeof value.tenantId !== 'string'
  ) {
    throw new DamagedConfigError(path, 'is missing apiBase, apiKey or tenantId');
  }
  // A key edited out of shape (a space, a curly quote, a line break) would be refused by fetch
  // with the whole key in its message, and written as it is into .env.service-dev: never repeated.
  if (!KEY_PATTERN.test(value.apiKey)) {
    throw new DamagedConfigError(path, 'has an apiKey that is not a whole service_sk_ key');
  }
  // Checked again here, not only at login: an edited file must not send the key in the clear.
  const apiBase = storedPlatformUrl(path, value.apiBase);
  // The key is a credential: put back the modes the CLI contract asks for if something loosened them.
  const mode = (await stat(path)).mode & 0o777;
  if (mode !== 0o600) {
    await chmod(path, 0o600);
    io.stderr.write(`Warning: ${path} had mode ${mode.toString(8)}; set it back to 600.\n`);
  }
  return {
    apiBase,
    apiKey: value.apiKey,
    tenantId: value.tenantId,
    appId: value.appId ?? null,
    issuedToEmail: value.issuedToEmail ?? null,
    issuedAt: value.issuedAt ?? '',
  };
}

/** The stored config, or the "not logged in" error (exit 1). */
export async function requireConfig(io: CliIo): Promise<CliConfig> {
  const config = await readConfig(io);
  if (!config) throw new CliError('Not logged in. Run service login first.');
  return config;
}

/**
 * Writes the config atomically (a temporary file renamed over the old one), the file with mode
 * 0600 and its folder 0700 whatever the umask says.
 */
export async function writeConfig(io: CliIo, config: CliConfig): Promise<string> {
  const path = configPath(io);
  await ensureConfigDir(io);
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    await chmod(temporary, 0o600);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => {});
    throw new CliError(`Could not write ${path} (${systemReason(error)}).`, 1, { cause: error });
  }
  return path;
}

/**
 * The config folder, made (mode 0700) if need be. `login` asks first, so a folder it cannot make
 * (a file named `.service`, a read-only home) fails before the browser mints a key for nothing.
 */
export async function ensureConfigDir(io: CliIo): Promise<void> {
  const dir = serviceDir(io);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700);
  } catch (error) {
    throw new CliError(`Could not make the config folder ${dir} (${systemReason(error)}).`, 1, {
      cause: error,
    });
  }
}

export async function removeConfig(io: CliIo): Promise<void> {
  await rm(configPath(io), { force: true });
}

/** A platform key's whole shape (CLI and App Keys alike): the prefix and 43 base64url characters. */
export const KEY_PATTERN = /^service_sk_[A-Za-z0-9_-]{43}$/;

/**
 * A key as the CLI shows it: the recognisable prefix and the last four characters
 * (`service_sk_…k3Qz`), enough to tell keys apart in a dashboard list, never enough to use one.
 */
export function displayKey(key: string): string {
  return `service_sk_…${key.slice(-4)}`;
}

/** Whether a key may be sent to `url`: over https, or plain http to this machine only. */
function sendsKeysSafely(url: URL): boolean {
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  return url.protocol === 'https:' || (url.protocol === 'http:' && loopback);
}

/**
 * A platform URL from `--api-base`: http(s), no trailing slash. Plain http only to this machine,
 * so a key is never sent in the clear over a network.
 */
export function parseApiBase(value: string): string {
  const problem = apiBaseProblem(value);
  if (problem === 'not-url') throw new CliError(`--api-base must be a URL, got "${value}"`, USAGE);
  if (problem) throw new CliError(`--api-base ${FLAG_PROBLEMS[problem]}`, USAGE);
  return normalApiBase(value);
}

/** What keeps `value` from being a platform URL, for `--api-base` and a stored one alike. */
function apiBaseProblem(value: string): 'not-url' | 'not-https' | 'extras' | null {
  if (!URL.canParse(value)) return 'not-url';
  const url = new URL(value);
  if (!sendsKeysSafely(url)) return 'not-https';
  if (url.username || url.password || url.search || url.hash) return 'extras';
  return null;
}

const FLAG_PROBLEMS = {
  'not-https': 'must use https:// (plain http:// only for localhost)',
  extras: 'must not carry credentials, a query or a fragment',
} as const;
const STORED_PROBLEMS = {
  'not-url': 'is not a URL',
  'not-https': 'is not https:// (plain http:// only for localhost)',
  extras: 'carries credentials, a query or a fragment',
} as const;

/** A platform URL as the CLI stores and joins it: no trailing slash. */
function normalApiBase(value: string): string {
  return new URL(value).toString().replace(/\/+$/, '');
}
