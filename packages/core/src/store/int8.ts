/**
 * Parses a Postgres int8 (bigint) as a JS number, refusing values that a number cannot hold
 * exactly. Money is integer micros: 2^53 micros is about 9 billion USD per wallet, far past any
 * balance we hold, and a loud failure beats a silently rounded amount.
 */
export function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) {
    throw new RangeError(`int8 value ${text} is outside the exactly representable range`);
  }
  return value;
}

export const INT8_OID = 20;

/** `date` and `numeric` read as their text: a calendar date has no time zone, a price no float error. */
export const DATE_OID = 1082;
export const NUMERIC_OID = 1700;
export const asText = (text: string): string => text;

/** The value parsers the store reads rows with, by type oid, on PostgreSQL and PGlite alike. */
export const STORE_PARSERS: Record<number, (text: string) => unknown> = {
  [INT8_OID]: parseInt8,
  [DATE_OID]: asText,
  [NUMERIC_OID]: asText,
};
