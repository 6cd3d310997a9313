import { type RawBuilder, sql } from 'kysely';

/**
 * Many rows as one parameter: `select ... from jsonb_to_recordset($1)`, to insert from. A batch
 * of settlements written as a multi-row `values` list binds every field of every row as a
 * parameter of its own (thousands per batch), each sent, parsed and bound on its own; as one
 * JSON document the batch crosses to the store in one piece, and Postgres reads it in one pass.
 *
 * `columns` maps each column to its SQL type, in the order the rows are read; the names and
 * types are the code's own, never input. JSON values of `jsonb` columns are given as values
 * (objects), not as text. A column whose value is the same in every row (a batch's time, say)
 * can be given once in `shared`, and left out of the rows: it is bound as one parameter, not
 * written and read again in each row.
 */
export function rowsFromJson(
  columns: Record<string, string>,
  rows: ReadonlyArray<object>,
  shared: Record<string, unknown> = {},
): RawBuilder<unknown> {
  const names = Object.keys(columns);
  const definition = names
    .filter((name) => !(name in shared))
    .map((name) => `${name} ${columns[name]}`)
    .join(', ');
  const selected = names.map((name) =>
    name in shared ? sql`${shared[name]}::${sql.raw(columns[name]!)}` : sql.raw(name),
  );
  return sql`select ${sql.join(selected)} from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(${sql.raw(definition)})`;
}

/** The column list of an insert from `rowsFromJson` with the same columns. */
export function columnList(columns: Record<string, string>): RawBuilder<unknown> {
  return sql.raw(`(${Object.keys(columns).join(', ')})`);
}
