/**
 * `checkAgainstRun`: the second half of the binding rule. Given one real result per query, it
 * reports every binding whose path the data does not have, so a document that passed the schema
 * check but reads a field the tool leaves out in practice is refused before anyone sees it.
 */
import { type AppDocument, binding as bindingSchema } from './document.js';
import { APP_DOCUMENT_LIMITS } from './limits.js';
import { formatPath, parsePath, resolvePath } from './path.js';
import { type Problem, ProblemList } from './problems.js';
import { usesOf } from './uses.js';

export type RunCheck = { ok: true } | { ok: false; problems: Problem[] };

/**
 * Checks a validated `document` against `results`: each query's name to what its tool returned.
 * A row field (a table column, a list line, a chart axis) counts as present when some row has it.
 */
export function checkAgainstRun(document: AppDocument, results: Readonly<Record<string, unknown>>): RunCheck {
  const problems = new ProblemList(APP_DOCUMENT_LIMITS.maxProblems);
  for (const name of Object.keys(document.queries)) {
    if (!Object.hasOwn(results, name))
      problems.add(`queries.${name}`, `no result was given for query "${name}"`);
  }
  const uses = usesOf(document);
  for (const use of uses.bindings) {
    if (!('$query' in use.binding)) continue;
    const missing = absentAt(use.binding.$query, use.binding.path ?? '', results);
    if (missing) problems.add(use.at, missing);
  }
  for (const use of uses.rowFields) {
    const rows = bindingSchema.safeParse(use.rows);
    if (!rows.success || !('$query' in rows.data)) continue;
    const field = parsePath(use.field);
    const data = dataAt(rows.data.$query, rows.data.path ?? '', results);
    if (!field.ok || !data || !Array.isArray(data.value) || data.value.length === 0) continue;
    if (!data.value.some((row) => resolvePath(row, field.segments).found)) {
      problems.add(
        use.at,
        `${use.component.name} field "${use.field}" is in none of the ${data.value.length} rows query "${rows.data.$query}" returned`,
      );
    }
  }
  return problems.empty ? { ok: true } : { ok: false, problems: problems.list() };
}

function dataAt(
  query: string,
  path: string,
  results: Readonly<Record<string, unknown>>,
): { value: unknown } | null {
  const parsed = parsePath(path);
  if (!parsed.ok || !Object.hasOwn(results, query)) return null;
  const found = resolvePath(results[query], parsed.segments);
  return found.found ? { value: found.value } : null;
}

/** Why `path` is absent from the query's result, or null when it is there (or the query has no result). */
function absentAt(query: string, path: string, results: Readonly<Record<string, unknown>>): string | null {
  const parsed = parsePath(path);
  if (!parsed.ok) return parsed.message;
  if (!Object.hasOwn(results, query)) return null; // reported once, at the query
  const found = resolvePath(results[query], parsed.segments);
  if (found.found) return null;
  const reached = formatPath(parsed.segments.slice(0, found.reached));
  const where = reached === '' ? 'the result itself' : `"${reached}"`;
  return `query "${query}" returned no "${path}": the data stops at ${where}`;
}
