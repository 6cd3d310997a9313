/**
 * Checks of numeric and list options, each refused with a `ServiceConfigError` before any request:
 * a value out of range would otherwise be read as something else without a word (an `attempts`
 * of 0 or NaN as 1, a `kinds` string as a set of its letters).
 */
import { ServiceConfigError } from './errors.js';
import { SERVICE_EVENT_KINDS } from './shapes.js';

function refuse(message: string): never {
  throw new ServiceConfigError('invalid_option', message);
}

/**
 * A timeout option: a positive number of milliseconds. `Infinity` (or anything longer than a timer
 * holds) means none; NaN, zero and below would fire at once, so they are refused.
 */
export function timeoutOption(name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value > 0)) {
    refuse(`${name} must be a positive number of milliseconds (Infinity for no timeout)`);
  }
  return value;
}

/**
 * A count of attempts, the first included: a whole number, 1 or more. 0 is refused rather than
 * read as "no retries" (1 is that, as is `retry: false`): a call always makes its first attempt.
 * `Infinity` only where `unlimited` says what it means.
 */
export function attemptsOption(name: string, value: unknown, unlimited?: string): number {
  if (unlimited !== undefined && value === Number.POSITIVE_INFINITY) return value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    refuse(
      `${name} must be a whole number of attempts, 1 or more (the first attempt included${unlimited ? `; Infinity ${unlimited}` : ''}), got ${String(value)}`,
    );
  }
  return value;
}

/** A backoff delay in milliseconds: 0 or more; `Infinity` only for a ceiling (`maxDelayMs`: none). */
export function delayOption(name: string, value: unknown, ceiling = false): number {
  const finite = typeof value === 'number' && Number.isFinite(value);
  if (typeof value !== 'number' || !(value >= 0) || (!finite && !ceiling)) {
    refuse(
      `${name} must be a number of milliseconds, 0 or more${ceiling ? ' (Infinity for no ceiling)' : ''}, got ${String(value)}`,
    );
  }
  return value;
}

/** An object of options (`retry`, `reconnect`): anything else would be spread as nothing. */
export function objectOption<T extends object>(name: string, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    refuse(`${name} must be an object of options, got ${Array.isArray(value) ? 'an array' : String(value)}`);
  }
  return value as T;
}

const KINDS = new Set<string>(SERVICE_EVENT_KINDS);

/**
 * The event kinds to deliver: a non-empty array of canonical kinds. A string would be read as
 * the set of its letters, and an unknown kind (a typo) is never delivered: either would be a
 * stream that stays silent for ever.
 */
export function kindsOption(value: unknown): Set<string> | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    refuse(
      `kinds must be an array of event kinds, such as ['connection.changed'], got ${JSON.stringify(value)}`,
    );
  }
  if (value.length === 0)
    refuse('kinds is empty: no event would ever be delivered; leave it out for every kind');
  const unknown = value.filter((kind) => typeof kind !== 'string' || !KINDS.has(kind));
  if (unknown.length > 0) {
    refuse(
      `kinds has ${unknown.map((kind) => JSON.stringify(kind)).join(', ')}, not an event kind: one of ${SERVICE_EVENT_KINDS.join(', ')}`,
    );
  }
  return new Set<string>(value);
}

/** A function option (`fetch`, `onError`, …): anything else would throw a TypeError mid-call. */
export function callbackOption(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'function') refuse(`${name} must be a function`);
}
