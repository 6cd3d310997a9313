import { formatUsd, MICROS_PER_USD } from '../../billing/payments/processor.js';

/**
 * Micros as the dashboard shows them: cents as usual, and an amount below a cent to the micro
 * (a metered call often costs a fraction of one), so a day of small calls never reads as zero.
 */
export function money(micros: number): string {
  if (micros === 0 || Math.abs(micros) >= MICROS_PER_USD / 100) return formatUsd(micros);
  const digits = (Math.abs(micros) / MICROS_PER_USD).toFixed(6).replace(/0+$/, '');
  return `${micros < 0 ? '-' : ''}USD ${digits}`;
}

/**
 * A whole number of micros as a form field shows USD: exact to the micro, with no separators and no
 * trailing zeros (`0.0036`, `25000000`, `9007199254.740991`), where dividing would round.
 */
export function exactUsd(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const size = Math.abs(micros);
  const rest = size % MICROS_PER_USD;
  // A multiple of a million divides exactly; `size / 1e6` alone could round up to the next dollar.
  const whole = (size - rest) / MICROS_PER_USD;
  const fraction = String(rest).padStart(6, '0').replace(/0+$/, '');
  return `${sign}${whole}${fraction ? `.${fraction}` : ''}`;
}

/**
 * A unit price as the pricing page shows it: to the cent at least (`USD 3.60` beside
 * `USD 0.18`), and to as many further digits as it has (`USD 0.0025`), up to ten.
 */
export function unitPrice(usd: number): string {
  const [whole, fraction = ''] = Math.abs(usd).toFixed(10).replace(/0+$/, '').split('.');
  return `${usd < 0 ? '-' : ''}USD ${whole}.${fraction.padEnd(2, '0')}`;
}

/** A count of units, `per` of them (`per call`, `per 1,000 tokens`). */
export function perUnits(per: number, unit: string): string {
  return per === 1 ? `per ${unit}` : `per ${per.toLocaleString('en-US')} ${unit}s`;
}

/** An ISO instant as a short UTC date and time (`2026-11-24 13:05 UTC`). */
export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '—' : `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
