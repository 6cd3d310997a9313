/**
 * The app document: a versioned JSON UI tree the Kit renders. Nodes name a Kit component and its
 * props; named queries call the host's read tools with literal input; a prop is a literal or a
 * binding to a query's result or to local state. A tree, not code, so every rule is a check.
 */
import { z } from 'zod';
import { APP_DOCUMENT_LIMITS, NAME_PATTERN } from './limits.js';

export const APP_DOCUMENT_VERSION = 1;

const name = (what: string) =>
  z.string().regex(NAME_PATTERN, `a ${what} name is a letter or _ then up to 63 letters, digits or _`);

/** Any JSON value, written out literally. */
export const jsonLiteral = z.json();
export type JsonLiteral = z.infer<typeof jsonLiteral>;

/** A prop bound to a field of a query's result: `{ $query: 'orders', path: 'items[0].total' }`. */
export const queryBinding = z.strictObject({
  $query: name('query'),
  /** Where in the result; omitted or empty for the whole result. */
  path: z.string().max(APP_DOCUMENT_LIMITS.maxPathLength).optional(),
});
export type QueryBinding = z.infer<typeof queryBinding>;

/** A prop bound to a key of the app's local state: `{ $state: 'tab' }`. */
export const stateBinding = z.strictObject({ $state: name('state') });
export type StateBinding = z.infer<typeof stateBinding>;

export type Binding = QueryBinding | StateBinding;

export const binding = z.union([queryBinding, stateBinding], {
  error: 'a binding is { $query: name, path?: "a.b[0]" } or { $state: key }',
});

/** True for a value written as a binding (a `$query` or `$state` member), well formed or not. */
export function looksLikeBinding(value: unknown): value is Record<string, unknown> {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    (Object.hasOwn(value, '$query') || Object.hasOwn(value, '$state'))
  );
}

export const isQueryBinding = (value: unknown): value is QueryBinding =>
  queryBinding.safeParse(value).success;
export const isStateBinding = (value: unknown): value is StateBinding =>
  stateBinding.safeParse(value).success;

/** One node of the tree. Props are checked against the component's Kit schema by the validator. */
export interface AppNode {
  component: string;
  props?: Record<string, JsonLiteral>;
  children?: AppNode[];
}

export const appNode: z.ZodType<AppNode> = z.strictObject({
  component: z.string().min(1).max(64),
  props: z.record(z.string().max(64), jsonLiteral).optional(),
  get children() {
    return z.array(appNode).optional();
  },
});

/** A named query: one call of a host read tool with literal input, run when the app opens. */
export const appQuery = z.strictObject({
  tool: z.string().min(1).max(128),
  input: z.record(z.string(), jsonLiteral).optional(),
});
export type AppQuery = z.infer<typeof appQuery>;

export const appDocument = z.strictObject({
  // An absent version says so: "must be 1" alone reads as if a wrong one was sent.
  version: z.literal(APP_DOCUMENT_VERSION, {
    error: (issue) =>
      issue.input === undefined
        ? `version is missing; it must be ${APP_DOCUMENT_VERSION}`
        : `version must be ${APP_DOCUMENT_VERSION}`,
  }),
  title: z.string().trim().min(1).max(120),
  root: appNode,
  queries: z
    .record(name('query'), appQuery)
    .refine((queries) => Object.keys(queries).length <= APP_DOCUMENT_LIMITS.maxQueries, {
      message: `at most ${APP_DOCUMENT_LIMITS.maxQueries} queries`,
    })
    .default({}),
  /** Local state: each key with its initial value, changed by buttons' setState actions. */
  state: z
    .record(name('state'), jsonLiteral)
    .refine((state) => Object.keys(state).length <= APP_DOCUMENT_LIMITS.maxStateKeys, {
      message: `at most ${APP_DOCUMENT_LIMITS.maxStateKeys} state keys`,
    })
    .optional(),
});
export type AppDocument = z.infer<typeof appDocument>;
