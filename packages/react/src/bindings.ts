/**
 * Bindings resolved at render time: a prop written `{ $query, path }` reads a field of that query's
 * result, `{ $state }` a key of the app's local state. What the data lacks resolves to undefined,
 * which each component shows as nothing: a document was checked before it was saved, but the data
 * it reads arrives later and may have changed shape.
 */
import { parsePath, resolvePath } from '@service/core/apps';

/** What bindings read: each query's result by name, and the local state. */
export interface Scope {
  queries: Readonly<Record<string, unknown>>;
  state: Readonly<Record<string, unknown>>;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The value at `path` (`items[0].name`) in `data`; undefined when the path is malformed or missing. */
export function readPath(data: unknown, path: string): unknown {
  const parsed = parsePath(path);
  if (!parsed.ok) return undefined;
  const found = resolvePath(data, parsed.segments);
  return found.found ? found.value : undefined;
}

/** A prop's value: a literal as written, a binding as what it reads now. */
export function resolveValue(value: unknown, scope: Scope): unknown {
  if (!isRecord(value)) return value;
  if (typeof value.$query === 'string') {
    if (!Object.hasOwn(scope.queries, value.$query)) return undefined;
    return readPath(scope.queries[value.$query], typeof value.path === 'string' ? value.path : '');
  }
  if (typeof value.$state === 'string') {
    return Object.hasOwn(scope.state, value.$state) ? scope.state[value.$state] : undefined;
  }
  return value;
}

/** Every prop of a node resolved (a binding only ever stands as a whole prop value). */
export function resolveProps(props: unknown, scope: Scope): Record<string, unknown> {
  if (!isRecord(props)) return {};
  const resolved: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(props)) resolved[key] = resolveValue(value, scope);
  return resolved;
}

/** A list prop's rows: the objects in it, anything else in the list skipped. */
export function rowsOf(value: unknown, limit = 1000): Record<string, unknown>[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).slice(0, limit);
}
