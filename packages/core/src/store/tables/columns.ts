/** Column types shared by every table: how timestamps and JSON read and write through Kysely. */
import type { ColumnType } from 'kysely';

/** A timestamp column: read as Date, written as Date or ISO string, defaulted by the database. */
export type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type NullableTimestamp = ColumnType<
  Date | null,
  Date | string | null | undefined,
  Date | string | null
>;
/** A column the database defaults: optional on insert. */
export type Defaulted<T> = ColumnType<T, T | undefined, T>;
/** jsonb: read as parsed JSON, written as a JSON string (both drivers accept text for jsonb). */
export type Json<T> = ColumnType<T, string, string>;
/** jsonb with a database default. */
export type DefaultedJson<T> = ColumnType<T, string | undefined, string>;

/** A timestamp the database defaults on insert and code moves on update. */
export type Touched = ColumnType<Date, Date | string | undefined, Date | string>;
/** Nullable jsonb. */
export type NullableJson<T> = ColumnType<T | null, string | null | undefined, string | null>;
