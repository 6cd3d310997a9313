/**
 * Binding paths: `a.b[0].c` names a field of a tool's result. A dot steps into an object field,
 * `[n]` into an array element. Field names may hold any character but `.`, `[` and `]`.
 */
export type PathSegment = { field: string } | { index: number };

export type ParsedPath = { ok: true; segments: PathSegment[] } | { ok: false; message: string };

const SEGMENT = /^([^.[\]]+)?((?:\[\d+\])*)$/;

/** The segments of `path`; the empty path names the whole value. */
export function parsePath(path: string): ParsedPath {
  if (path === '') return { ok: true, segments: [] };
  const segments: PathSegment[] = [];
  for (const [position, part] of path.split('.').entries()) {
    const match = SEGMENT.exec(part);
    if (!match || (!match[1] && (position > 0 || !match[2]))) {
      return {
        ok: false,
        message: `"${path}" is not a field path; write fields with dots and list positions as [n], like "items[0].name"`,
      };
    }
    if (match[1]) segments.push({ field: match[1] });
    for (const index of match[2]?.matchAll(/\[(\d+)\]/g) ?? []) segments.push({ index: Number(index[1]) });
  }
  return { ok: true, segments };
}

/** `segments` written back as a path (`a.b[0].c`). */
export function formatPath(segments: readonly PathSegment[]): string {
  let text = '';
  for (const segment of segments) {
    if ('index' in segment) text += `[${segment.index}]`;
    else text += text === '' ? segment.field : `.${segment.field}`;
  }
  return text;
}

/** The value at `segments` in `data`, or `found: false` with how far the walk got. */
export function resolvePath(
  data: unknown,
  segments: readonly PathSegment[],
): { found: true; value: unknown } | { found: false; reached: number } {
  let value = data;
  for (const [depth, segment] of segments.entries()) {
    if ('index' in segment) {
      if (!Array.isArray(value) || segment.index >= value.length) return { found: false, reached: depth };
      value = value[segment.index];
    } else {
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        return { found: false, reached: depth };
      if (!Object.hasOwn(value, segment.field)) return { found: false, reached: depth };
      value = (value as Record<string, unknown>)[segment.field];
    }
  }
  return { found: true, value };
}
