import { z } from 'zod';

/**
 * A whole number in a query or a header as people write one: decimal digits only, from `min` to
 * `max`. `z.coerce.number()` alone also reads `0x10`, `1e3`, ` 5 ` and an empty value as numbers.
 */
export function wholeNumber(min: number, max: number) {
  return z
    .string()
    .regex(/^[0-9]{1,16}$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}
