/**
 * Reading a host tool's output JSON Schema along a binding path: does the tool declare the field,
 * and what JSON types may it hold. Understands properties, additionalProperties, items and
 * prefixItems, local `$ref`s, and anyOf/oneOf/allOf (a field declared in any branch counts).
 */
import { formatPath, type PathSegment } from './path.js';

/** A JSON Schema as tools declare them: an object, or `true`/`false`. */
export type JsonSchema = boolean | { [keyword: string]: unknown };

/** A JSON type; `integer` is also a `number`. */
export type JsonType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'null';

const MAX_REF_HOPS = 32;

export type SchemaStep =
  | { ok: true; schemas: JsonSchema[] }
  | { ok: false; at: string; missing: string; known: string[] };

/**
 * The schemas that may describe the value at `segments` of a value described by `root`, or where
 * the walk stopped: `at` the path that exists, `missing` the segment it does not declare, and the
 * fields it does declare there.
 */
export function schemaAt(root: JsonSchema, segments: readonly PathSegment[]): SchemaStep {
  let current = expand(root, [root]);
  for (const [depth, segment] of segments.entries()) {
    const next = current
      .flatMap((schema) => step(schema, segment))
      .flatMap((schema) => expand(root, [schema]));
    if (next.length === 0) {
      return {
        ok: false,
        at: formatPath(segments.slice(0, depth)),
        missing: 'index' in segment ? `[${segment.index}]` : segment.field,
        known: [...new Set(current.flatMap(fieldNames))].sort(),
      };
    }
    current = next;
  }
  return { ok: true, schemas: current };
}

/** The JSON types the schemas allow, or `any` when one of them does not say. */
export function typesOf(schemas: readonly JsonSchema[]): Set<JsonType> | 'any' {
  const types = new Set<JsonType>();
  for (const schema of schemas) {
    if (schema === true || typeof schema !== 'object') return 'any';
    const declared = schema.type ?? inferredType(schema);
    if (declared === undefined) return 'any';
    for (const type of Array.isArray(declared) ? declared : [declared]) types.add(type as JsonType);
  }
  return types;
}

/** Types a schema implies without `type`: an enum's or const's values. */
function inferredType(schema: Record<string, unknown>): JsonType[] | undefined {
  const values = 'const' in schema ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : undefined;
  if (!values) return undefined;
  return values.map((value) =>
    value === null ? 'null' : Array.isArray(value) ? 'array' : (typeof value as JsonType),
  );
}

/** Whether a value of `actual` types can fill a slot of `expected` types. */
export function typesFit(actual: Set<JsonType> | 'any', expected: Set<JsonType> | 'any'): boolean {
  if (actual === 'any' || expected === 'any') return true;
  for (const type of actual) {
    if (expected.has(type)) return true;
    if (type === 'integer' && expected.has('number')) return true;
    if (type === 'number' && expected.has('integer')) return true;
  }
  return false;
}

/** A schema with its `$ref`s followed and its anyOf/oneOf/allOf branches listed as alternatives. */
function expand(root: JsonSchema, schemas: JsonSchema[], hops = 0): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const schema of schemas) {
    if (typeof schema !== 'object') {
      if (schema) out.push(schema);
      continue;
    }
    if (typeof schema.$ref === 'string') {
      const target = hops < MAX_REF_HOPS ? refTarget(root, schema.$ref) : undefined;
      if (target !== undefined) out.push(...expand(root, [target], hops + 1));
      continue;
    }
    const branches = [schema.anyOf, schema.oneOf, schema.allOf].filter(Array.isArray).flat() as JsonSchema[];
    if (branches.length > 0) out.push(...expand(root, branches, hops + 1));
    const { anyOf: _a, oneOf: _o, allOf: _l, ...own } = schema;
    if (branches.length === 0 || Object.keys(own).some((key) => key !== '$schema' && key !== 'description')) {
      out.push(schema);
    }
  }
  return out;
}

/** `#`, `#/$defs/x`, `#/definitions/x`, or any JSON pointer into the root. */
function refTarget(root: JsonSchema, ref: string): JsonSchema | undefined {
  if (!ref.startsWith('#')) return undefined;
  let target: unknown = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (target === null || typeof target !== 'object' || !Object.hasOwn(target, key)) return undefined;
    target = (target as Record<string, unknown>)[key];
  }
  return typeof target === 'boolean' || (target !== null && typeof target === 'object')
    ? (target as JsonSchema)
    : undefined;
}

/** The schemas a segment leads to from one schema; none when the schema does not declare it. */
function step(schema: JsonSchema, segment: PathSegment): JsonSchema[] {
  if (schema === true) return [true];
  if (typeof schema !== 'object') return [];
  if ('index' in segment) {
    if (!allows(schema, 'array')) return [];
    const prefix = schema.prefixItems;
    if (Array.isArray(prefix) && segment.index < prefix.length) return [prefix[segment.index] as JsonSchema];
    if (Array.isArray(schema.items)) {
      return segment.index < schema.items.length ? [schema.items[segment.index] as JsonSchema] : [];
    }
    return schema.items === undefined ? [true] : [schema.items as JsonSchema];
  }
  if (!allows(schema, 'object')) return [];
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (properties && Object.hasOwn(properties, segment.field)) return [properties[segment.field]!];
  const additional = schema.additionalProperties;
  if (additional !== undefined && additional !== false) return [additional as JsonSchema];
  // An object schema that names no fields at all says nothing about them; one that names some
  // declares those only: a binding past them is a field the tool does not return.
  return properties === undefined && additional === undefined ? [true] : [];
}

function allows(schema: Record<string, unknown>, type: JsonType): boolean {
  const declared = schema.type;
  if (declared === undefined) return true;
  return Array.isArray(declared) ? declared.includes(type) : declared === type;
}

function fieldNames(schema: JsonSchema): string[] {
  if (typeof schema !== 'object') return [];
  return Object.keys((schema.properties as Record<string, unknown> | undefined) ?? {});
}
