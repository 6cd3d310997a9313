/**
 * How the Kit writes values as text. Every value reaching a component may be anything the data
 * holds, so each formatter takes `unknown` and answers a string (empty for what it cannot show),
 * never throwing: an unknown currency code or a bad date falls back to plain text.
 */

export type MoneyUnit = 'major' | 'minor' | 'micros';

/** A scalar as text: strings as they are, finite numbers and booleans written out, else empty. */
export function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  if (typeof value === 'boolean') return String(value);
  return '';
}

export function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * `locale` when Intl takes it, else undefined (the reader's own). A host may pass what it has, an
 * `Accept-Language` value (`en-US,en;q=0.9`) or worse, and Intl throws a RangeError on those.
 */
export function usableLocale(locale: unknown): string | undefined {
  if (typeof locale !== 'string') return undefined;
  try {
    return Intl.getCanonicalLocales(locale)[0];
  } catch {
    return undefined;
  }
}

export function formatNumber(value: unknown, locale?: string): string {
  const number = numberOrNull(value);
  return number === null ? textOf(value) : new Intl.NumberFormat(locale).format(number);
}

/** The currency's minor-unit digits (USD 2, JPY 0), or null for a code Intl does not know. */
function currencyDigits(currency: string, locale?: string): number | null {
  try {
    return (
      new Intl.NumberFormat(locale, { style: 'currency', currency }).resolvedOptions()
        .maximumFractionDigits ?? 2
    );
  } catch {
    return null;
  }
}

/**
 * An amount of money counted in `unit`, formatted for the reader: `major` is whole units (12.5),
 * `minor` the smallest unit (1250 cents; for JPY the same as major), `micros` millionths (12500000),
 * shown with up to six decimals so that fractions of a cent stay visible.
 */
export function formatMoney(
  amount: unknown,
  currency: unknown,
  unit: unknown = 'major',
  locale?: string,
): string {
  const value = numberOrNull(amount);
  if (value === null) return textOf(amount);
  const code = typeof currency === 'string' && /^[A-Z]{3}$/.test(currency) ? currency : null;
  const digits = code ? currencyDigits(code, locale) : null;
  if (code === null || digits === null) return `${formatNumber(value, locale)}${code ? ` ${code}` : ''}`;
  const major = unit === 'minor' ? value / 10 ** digits : unit === 'micros' ? value / 1_000_000 : value;
  return new Intl.NumberFormat(locale, {
    style: 'currency',
    currency: code,
    minimumFractionDigits: digits,
    maximumFractionDigits: unit === 'micros' ? Math.max(digits, 6) : digits,
  }).format(major);
}

/** A date (ISO string or epoch milliseconds) as a short local date; anything else as text. */
export function formatDate(value: unknown, locale?: string): string {
  if (typeof value !== 'string' && typeof value !== 'number') return textOf(value);
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return textOf(value);
  return new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeZone: 'UTC' }).format(date);
}

/** Picks `value` when it is one of `allowed`, else `fallback`: class names come only from the Kit's words. */
export function oneOf<T extends string>(value: unknown, allowed: readonly T[], fallback: T): T {
  return allowed.includes(value as T) ? (value as T) : fallback;
}
