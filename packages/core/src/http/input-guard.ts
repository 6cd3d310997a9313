/**
 * The one input guard of every surface (platform routes, the proxy's path, the wire): what a
 * client sends is refused as a 400 before it can reach a validator, a lookup table or the store
 * in a shape that would fault there.
 *
 * - Text must be well-formed: no NUL character (PostgreSQL text cannot hold one) and no lone
 *   UTF-16 surrogate (it has no UTF-8 form; the store would silently replace it). This holds for
 *   every string of a JSON body (keys included), every path segment and every query value.
 * - JSON nests at most `MAX_JSON_DEPTH` levels, checked on the text before it is parsed, so a
 *   small body of 5,000 nested objects never reaches a recursive validator or serializer.
 * - A name a client picks (`?range=constructor`, `__proto__`) is looked up among own keys only
 *   (`ownValue`): a name of `Object.prototype` reads as unknown, never as a built-in.
 *
 * Body size is the capped reader's job (`http/body.ts`); this module sees text already read.
 *
 * @see docs/errors.md "Input rules"
 */

/** Deepest nesting of arrays and objects a JSON body may have. */
export const MAX_JSON_DEPTH = 32;

/** Why a value is refused, in words a client can act on; null when it is acceptable. */
export type InputProblem = string | null;

/** A NUL, or a high surrogate not followed by a low one, or a low one not preceded by a high one. */
const UNSAFE_TEXT = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What is wrong with a string as text, or null when it is well-formed and free of NUL. */
export function textProblem(value: string): InputProblem {
  const match = UNSAFE_TEXT.exec(value);
  if (!match) return null;
  return match[0] === '\0' ? 'contains a NUL character' : 'contains an unpaired UTF-16 surrogate';
}

/**
 * A host's user id as it names them (the wire's subject, the platform's `end_user`): 1 to 256
 * characters, any script, no control characters, and text the store can hold (no NUL, no
 * unpaired surrogate). Characters are code points: an emoji is one, not two UTF-16 units.
 */
export function isHostUserId(user: string): boolean {
  const characters = [...user].length;
  return characters >= 1 && characters <= 256 && !CONTROL.test(user) && textProblem(user) === null;
}
const CONTROL = /\p{Cc}/u;

/**
 * The string with each NUL and unpaired surrogate replaced by U+FFFD: for text already accepted
 * that must still reach the store (a record written before the guard refused such text).
 */
export function storableText(value: string): string {
  return textProblem(value) === null ? value : value.replace(new RegExp(UNSAFE_TEXT, 'g'), '\ufffd');
}

/**
 * What is wrong with a URL's path or query: a percent-encoding that does not decode, or a
 * decoded segment or query name or value that is not clean text. `pathSegments` limits the check
 * to the first segments (the proxy forwards the rest of its path as sent).
 */
export function urlProblem(url: URL, options: { pathSegments?: number } = {}): InputProblem {
  const segments = url.pathname
    .split('/')
    .slice(1, options.pathSegments === undefined ? undefined : options.pathSegments + 1);
  for (const segment of segments) {
    const decoded = decodeOrNull(segment);
    if (decoded === null) return 'path has a malformed percent-encoding';
    const problem = textProblem(decoded);
    if (problem) return `path ${problem}`;
  }
  if (options.pathSegments !== undefined) return null;
  for (const part of url.search.slice(1).split('&')) {
    const decoded = decodeOrNull(part.replace(/\+/g, ' '));
    if (decoded === null) return 'query has a malformed percent-encoding';
    const problem = textProblem(decoded);
    if (problem) return `query ${problem}`;
  }
  return null;
}

/** A parsed body, or why it is refused: `syntax` (not JSON: callers word that their own way) or `guard`. */
export type JsonInput =
  | { ok: true; value: unknown }
  | { ok: false; reason: 'syntax' | 'guard'; message: string };

/**
 * Parses a JSON body under the guard: nesting capped, every string (keys too) clean text. An
 * empty or blank text reads as `{}`. Messages name where the problem is (`body.metadata.a: ...`).
 */
export function parseJsonInput(text: string, options: { where?: string; maxDepth?: number } = {}): JsonInput {
  const where = options.where ?? 'body';
  if (text.trim() === '') return { ok: true, value: {} };
  const tooDeep = jsonDepthProblem(text, { where, maxDepth: options.maxDepth });
  if (tooDeep) return { ok: false, reason: 'guard', message: tooDeep };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'syntax', message: `${where} must be valid JSON` };
  }
  const problem = jsonValueProblem(value, where);
  return problem ? { ok: false, reason: 'guard', message: problem } : { ok: true, value };
}

/**
 * Whether a JSON text nests deeper than the cap, checked before parsing (for callers that word
 * the other refusals their own way, as the door's OAuth endpoints do).
 */
export function jsonDepthProblem(
  text: string,
  options: { where?: string; maxDepth?: number } = {},
): InputProblem {
  const maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
  return nestingDepth(text) > maxDepth
    ? `${options.where ?? 'body'} nests deeper than ${maxDepth} levels`
    : null;
}

/** The first string (key or value) of a parsed JSON value that is not clean text, as `path: problem`. */
export function jsonValueProblem(value: unknown, where: string): InputProblem {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    return problem ? `${where}: ${problem}` : null;
  }
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const problem = jsonValueProblem(item, `${where}.${i}`);
      if (problem) return problem;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const keyProblem = textProblem(key);
      if (keyProblem) return `${where}: a key ${keyProblem}`;
      const problem = jsonValueProblem(item, `${where}.${key}`);
      if (problem) return problem;
    }
  }
  return null;
}

/** The fields of a form (or any string map) checked as text; the first problem as `where.name: problem`. */
export function fieldsProblem(fields: Iterable<[string, unknown]>, where: string): InputProblem {
  for (const [name, value] of fields) {
    const problem = textProblem(name) ?? (typeof value === 'string' ? textProblem(value) : null);
    if (problem) return `${where}.${name.replace(UNSAFE_TEXT, '?')}: ${problem}`;
  }
  return null;
}

/**
 * `table[key]` when `key` is the table's own: a client-chosen name such as `constructor` or
 * `__proto__` is unknown, not a property every object inherits.
 */
export function ownValue<V>(table: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** Deepest nesting of `[` and `{` outside strings; linear, no recursion, stops past the cap. */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x7b || ch === 0x5b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return deepest;
}

/** `decodeURIComponent`, or null for text that is not valid percent-encoding. */
export function decodeOrNull(part: string): string | null {
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}
