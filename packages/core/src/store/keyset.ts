/**
 * Pages of a list newest first, by `created_at` then id, where the next page starts after a
 * position (a row's `created_at` to the microsecond and its id) rather than after a row looked up
 * by id: a page's cursor still leads on when the row it names has been deleted meanwhile.
 *
 * A cursor reads `<created_at>~<id>`, the time as UTC ISO text to the microsecond (a `Date` keeps
 * milliseconds, too coarse to tell apart rows written in the same millisecond).
 */
import { type RawBuilder, sql } from 'kysely';

export interface ListPosition {
  /** `created_at` as UTC ISO text, to the microsecond. */
  at: string;
  id: string;
}

/** A page of a list: its items and the cursor of the next page, null on the last. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** `created_at` exactly, as a position's `at`: select it beside a list's columns. */
export const exactCreatedAt: RawBuilder<string> = sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** The rows after `position` in a newest-first list (its index on `created_at desc, id desc`). */
export function after(position: ListPosition): RawBuilder<boolean> {
  return sql<boolean>`(created_at, id) < (${position.at}::timestamptz, ${position.id})`;
}

/** Years 0001 to 9999: the store has no year 0 (1 BC). */
const CURSOR = /^((?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)~([A-Za-z0-9_-]{1,64})$/;

/** The position a cursor names, or null for anything that is not a cursor of a list of `isId`'s ids. */
export function positionOf(cursor: string, isId: (id: string) => boolean): ListPosition | null {
  const match = CURSOR.exec(cursor);
  if (!match || !isId(match[2]!)) return null;
  const at = match[1]!;
  // A real instant only (no 30 February, no 24 o'clock), or the store would refuse to read it.
  const time = new Date(at);
  if (Number.isNaN(time.getTime()) || time.toISOString().slice(0, 23) !== at.slice(0, 23)) return null;
  return { at, id: match[2]! };
}

/**
 * The page of rows a list read `limit + 1` of (the one more tells whether a next page exists),
 * each shown by `view`.
 */
export function pageOf<Row extends { cursor_at: string; id: string }, T>(
  rows: Row[],
  limit: number,
  view: (row: Row) => T,
): Page<T> {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return {
    items: shown.map(view),
    nextCursor: rows.length > limit && last ? `${last.cursor_at}~${last.id}` : null,
  };
}
