/**
 * The one byte range a download serves from a `Range` header (RFC 9110 §14): `bytes=a-b`,
 * `bytes=a-` or `bytes=-n`. A server may ignore a range it does not serve, and this one serves the
 * whole representation for anything else: a unit other than bytes, a malformed header, or several
 * ranges (a multipart answer that browsers and download managers never need for one file). A range
 * that starts past the end cannot be satisfied (416).
 */

/** The bytes `start` to `end`, both included. */
export interface ByteRange {
  start: number;
  end: number;
}

export type RangeAnswer = { whole: true } | { range: ByteRange } | { unsatisfiable: true };

const SINGLE_RANGE = /^bytes[ \t]*=[ \t]*(\d*)[ \t]*-[ \t]*(\d*)[ \t]*$/i;

/** What to serve of `size` bytes for the `Range` header `header` (null or absent: the whole). */
export function rangeOf(header: string | null | undefined, size: number): RangeAnswer {
  const match = header ? SINGLE_RANGE.exec(header) : null;
  if (!match) return { whole: true };
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return { whole: true };
  if (first === '') {
    // A suffix: the last `last` bytes, all of them when the file is shorter.
    const length = Number(last);
    if (length === 0) return { unsatisfiable: true };
    return size === 0
      ? { unsatisfiable: true }
      : { range: { start: Math.max(0, size - length), end: size - 1 } };
  }
  const start = Number(first);
  // A backwards range is not a range at all (served whole); one starting past the end is refused.
  if (last !== '' && Number(last) < start) return { whole: true };
  if (start >= size) return { unsatisfiable: true };
  return { range: { start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) } };
}
