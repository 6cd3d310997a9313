import type { WizardInputRow } from '../store/database.js';
import { DeployError } from './errors.js';

/** A name a secret may have: it becomes an environment variable of the deployment. */
export const SECRET_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;
/** The most a wizard input or secret value may hold. */
export const MAX_VALUE_CHARS = 16_384;

/**
 * Names an input or secret may not take: the variables the platform sets itself (its value would
 * win, which the tenant would not expect), and those that change how the process is started
 * rather than what the tool reads: the dynamic loader's (`LD_PRELOAD` loads a library into it),
 * Node's own (`NODE_REDIRECT_WARNINGS` and `NODE_V8_COVERAGE` write files, `NODE_EXTRA_CA_CERTS`
 * reads one; `NODE_ENV` is the tool's, and stays free), a shell's start-up ones, and those the C
 * library and OpenSSL read at start (`OPENSSL_CONF` can name an engine library to load).
 */
export function isReservedName(name: string): boolean {
  const upper = name.toUpperCase();
  if (upper.startsWith('SERVICE_') || upper.startsWith('LD_')) return true;
  if (upper.startsWith('NODE_')) return upper !== 'NODE_ENV';
  return RESERVED_NAMES.has(upper);
}
const RESERVED_NAMES = new Set([
  'PORT',
  'PATH',
  'HOME',
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PS4',
  'IFS',
  // Read by the C library and OpenSSL as the process starts: each can load code into it.
  'OPENSSL_CONF',
  'OPENSSL_MODULES',
  'OPENSSL_ENGINES',
  'GCONV_PATH',
  'GLIBC_TUNABLES',
  'LOCPATH',
]);

/** Wizard inputs whose values are sealed like secrets and never shown again. */
const SECRET_TYPES = new Set(['secret', 'password']);

export interface CheckedInputs {
  /** Plain values by key, kept with the deployment. */
  plain: Record<string, string>;
  /** Values of secret-typed inputs by key, sealed as the app's secrets. */
  secret: Record<string, string>;
}

/**
 * Checks wizard input values against the release's inputs: no unknown keys, every required one
 * present and non-empty, each of its type (`number`, `boolean`, `url`, `email`; anything else is
 * text). Values become environment variable strings.
 */
export function checkInputs(declared: WizardInputRow[], given: Record<string, unknown>): CheckedInputs {
  const refuse = (message: string) => new DeployError(400, message, 'INVALID_INPUT');
  const byKey = new Map(declared.map((input) => [input.key, input]));
  for (const key of Object.keys(given)) {
    if (!byKey.has(key)) throw refuse(`Unknown input "${key}": the release does not ask for it`);
  }
  const checked: CheckedInputs = { plain: {}, secret: {} };
  for (const input of declared) {
    const raw = given[input.key];
    if (raw === undefined || raw === null || raw === '') {
      if (input.required) throw refuse(`Input "${input.key}" (${input.label}) is required`);
      continue;
    }
    const value = envValueOf(input, raw, refuse);
    if (value.length > MAX_VALUE_CHARS)
      throw refuse(`Input "${input.key}" is longer than ${MAX_VALUE_CHARS} characters`);
    if (isReservedName(input.key)) continue;
    if (SECRET_TYPES.has(input.type)) checked.secret[input.key] = value;
    else checked.plain[input.key] = value;
  }
  return checked;
}

function envValueOf(input: WizardInputRow, raw: unknown, refuse: (message: string) => DeployError): string {
  const wrong = () => refuse(`Input "${input.key}" must be ${describeType(input.type)}`);
  switch (input.type) {
    case 'number': {
      const number =
        typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() ? Number(raw) : Number.NaN;
      if (!Number.isFinite(number)) throw wrong();
      return String(number);
    }
    case 'boolean':
      if (typeof raw === 'boolean') return String(raw);
      if (raw === 'true' || raw === 'false') return raw;
      throw wrong();
    case 'url':
      if (typeof raw !== 'string' || !URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol))
        throw wrong();
      return raw;
    case 'email':
      if (typeof raw !== 'string' || !/^[^\s@]+@[^\s@]+$/.test(raw)) throw wrong();
      return raw;
    default:
      if (typeof raw !== 'string') throw wrong();
      return raw;
  }
}

function describeType(type: string): string {
  switch (type) {
    case 'number':
      return 'a number';
    case 'boolean':
      return 'true or false';
    case 'url':
      return 'an http(s) URL';
    case 'email':
      return 'an email address';
    default:
      return 'a string';
  }
}
