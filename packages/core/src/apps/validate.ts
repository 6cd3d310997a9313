/**
 * `validateDocument`: whether an app document may be saved, checked against the Kit and the
 * host's tool catalog. A refused document comes back with problems in words the agent can act on;
 * an accepted one comes back parsed.
 */
import type { z } from 'zod';
import {
  type AppDocument,
  type AppNode,
  appDocument,
  binding as bindingSchema,
  looksLikeBinding,
  queryBinding,
  stateBinding,
} from './document.js';
import { type JsonSchema, type JsonType, schemaAt, typesFit, typesOf } from './json-schema.js';
import { KIT_NAMES, type KitComponent, kitComponent, propsJsonSchema } from './kit.js';
import { APP_DOCUMENT_LIMITS } from './limits.js';
import { formatPath, type PathSegment, parsePath, resolvePath } from './path.js';
import { nameList, type Problem, ProblemList, pathOf, under } from './problems.js';
import { shapeProblem } from './shape.js';
import { actionInputOf, type BindingUse, type RowFieldUse, usesOf } from './uses.js';
import { eachNode } from './walk.js';

/** One host tool as the validator sees it. */
export interface AppTool {
  /** Whether the tool only reads (risk `read`): only read tools may back a query. */
  read: boolean;
  /** The JSON Schema of its result; without one, bindings into it are checked only on a real run. */
  output?: JsonSchema;
}

/** The host's tools by name. */
export type AppToolCatalog = Readonly<Record<string, AppTool>>;

export type Validation = { ok: true; document: AppDocument } | { ok: false; problems: Problem[] };

export function validateDocument(raw: unknown, options: { tools: AppToolCatalog }): Validation {
  const shape = shapeProblem(raw);
  if (shape) return { ok: false, problems: [shape] };
  const parsed = appDocument.safeParse(raw, { error: missingMember });
  if (!parsed.success) return { ok: false, problems: zodProblems(parsed.error, '') };

  const document = parsed.data;
  const problems = new ProblemList(APP_DOCUMENT_LIMITS.maxProblems);
  const tools = options.tools;
  checkQueries(document, tools, problems);
  const propsOk = checkNodes(document, tools, problems);
  const uses = usesOf(document, (node) => propsOk.has(node));
  for (const use of uses.bindings) checkBinding(use, document, tools, problems);
  for (const use of uses.rowFields) checkRowField(use, document, tools, problems);
  return problems.empty ? { ok: true, document } : { ok: false, problems: problems.list() };
}

/** A required member that is absent says it is missing, instead of "received undefined". */
const missingMember = (issue: z.core.$ZodRawIssue): string | undefined =>
  issue.code === 'invalid_type' && issue.input === undefined
    ? `${String(issue.path?.at(-1) ?? 'value')} is missing; expected ${issue.expected}`
    : undefined;

function zodProblems(error: z.ZodError, base: string): Problem[] {
  return error.issues.slice(0, APP_DOCUMENT_LIMITS.maxProblems).map((issue) => ({
    path: under(base, ...issue.path),
    // A refused record key says why in its inner issue ("a query name is ..."), not in its own.
    message: issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message,
  }));
}

const own = (record: object | undefined, key: string): boolean =>
  record !== undefined && Object.hasOwn(record, key);

function checkQueries(document: AppDocument, tools: AppToolCatalog, problems: ProblemList): void {
  for (const [name, query] of Object.entries(document.queries)) {
    const at = pathOf(['queries', name, 'tool']);
    if (!own(tools, query.tool)) {
      problems.add(
        at,
        `query "${name}" calls "${query.tool}", which is not a host tool; the tools are ${nameList(Object.keys(tools))}`,
      );
    } else if (!tools[query.tool]!.read) {
      problems.add(
        at,
        `query "${name}" calls "${query.tool}", which is not a read tool; a query may only read, so call it from a Button action instead`,
      );
    }
  }
}

/** Checks each node's component, children and literal props; returns the nodes whose props passed. */
function checkNodes(document: AppDocument, tools: AppToolCatalog, problems: ProblemList): Set<AppNode> {
  const propsOk = new Set<AppNode>();
  eachNode(document.root, (node, at) => {
    const component = kitComponent(node.component);
    if (!component) {
      problems.add(
        under(at, 'component'),
        `unknown component "${node.component}"; the Kit has ${KIT_NAMES.join(', ')}`,
      );
      return;
    }
    if (node.children?.length && !component.children) {
      problems.add(
        under(at, 'children'),
        `${component.name} takes no children; wrap them in a Stack, Row or Card`,
      );
    }
    if (checkProps(node, component, at, problems)) {
      propsOk.add(node);
      checkAction(node, document, tools, at, problems);
    }
  });
  return propsOk;
}

/** The props written literally must pass the component's schema; bound props are checked as bindings. */
function checkProps(node: AppNode, component: KitComponent, at: string, problems: ProblemList): boolean {
  const props = node.props ?? {};
  const known = Object.keys(component.props.shape);
  const literal: Record<string, unknown> = {};
  const bound: Record<string, true> = {};
  let ok = true;
  for (const [prop, value] of Object.entries(props)) {
    if (!known.includes(prop)) {
      problems.add(
        under(at, 'props', prop),
        `${component.name} has no prop "${prop}"; its props are ${known.join(', ')}`,
      );
      ok = false;
    } else if (looksLikeBinding(value) && component.literalOnly?.includes(prop)) {
      problems.add(
        under(at, 'props', prop),
        `${component.name}.${prop} must be written out, not bound: it is fixed when the app is checked`,
      );
      ok = false;
    } else if (looksLikeBinding(value)) {
      const parsed = bindingSchema.safeParse(value);
      if (!parsed.success) {
        problems.add(under(at, 'props', prop), `${BINDING_FORM}; ${describeBindingIssue(value)}`);
        ok = false;
      }
      bound[prop] = true;
    } else {
      literal[prop] = value;
    }
  }
  for (const [field, value] of Object.entries(component.name === 'Button' ? actionInputOf(literal) : {})) {
    if (looksLikeBinding(value) && !bindingSchema.safeParse(value).success) {
      problems.add(
        under(at, 'props', 'action', 'input', field),
        `${BINDING_FORM}; ${describeBindingIssue(value)}`,
      );
      ok = false;
    }
  }
  for (const [prop, value] of Object.entries(literal)) {
    const allowed = component.name === 'Button' && prop === 'action' ? actionInputOf(literal) : undefined;
    const stray = strayBinding(value, allowed);
    if (stray !== null) {
      problems.add(
        under(at, 'props', prop, ...stray),
        "a binding may stand only as a whole prop's value or as a field of a Button action's input",
      );
      ok = false;
    }
  }
  if (!ok) return false;
  const result = component.props.omit(bound).safeParse(literal);
  if (!result.success) {
    for (const problem of zodProblems(result.error, under(at, 'props'))) {
      problems.add(problem.path, `${component.name}: ${problem.message}`);
    }
    return false;
  }
  return true;
}

const BINDING_FORM = 'a binding is { $query: name, path?: "a.b[0]" } or { $state: key }';

/** What is wrong with a value written as a binding, read by the form its key announces. */
function describeBindingIssue(value: Record<string, unknown>): string {
  const form = Object.hasOwn(value, '$query') ? queryBinding : stateBinding;
  const issue = form.safeParse(value).error?.issues[0];
  if (!issue) return 'it has both $query and $state';
  return issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message;
}

/** The path of a binding nested inside a literal value, skipping the values of `allowed` (an action's input). */
function strayBinding(value: unknown, allowed: Record<string, unknown> | undefined): PropertyKey[] | null {
  const stack: [unknown, PropertyKey[]][] = [[value, []]];
  while (stack.length > 0) {
    const [current, path] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (looksLikeBinding(current)) return path;
    const entries = Array.isArray(current) ? current.entries() : Object.entries(current);
    for (const [key, child] of entries) {
      if (current === allowed && looksLikeBinding(child)) continue;
      stack.push([child, [...path, key]]);
    }
  }
  return null;
}

function checkAction(
  node: AppNode,
  document: AppDocument,
  tools: AppToolCatalog,
  at: string,
  problems: ProblemList,
): void {
  const action = node.props?.action as { type: string; tool?: string; key?: string } | undefined;
  if (node.component !== 'Button' || !action || typeof action !== 'object' || Array.isArray(action)) return;
  if (action.type === 'tool' && !own(tools, action.tool!)) {
    problems.add(
      under(at, 'props', 'action', 'tool'),
      `the button calls "${action.tool}", which is not a host tool; the tools are ${nameList(Object.keys(tools))}`,
    );
  }
  if (action.type === 'setState' && !own(document.state, action.key!)) {
    problems.add(
      under(at, 'props', 'action', 'key'),
      `the button sets state "${action.key}", which is not declared; declare it under state with its initial value`,
    );
  }
}

/** The JSON types a prop of `component` accepts, or `any` for a tool input field. */
function expectedTypes(component: KitComponent, prop: string | null): Set<JsonType> | 'any' {
  if (prop === null) return 'any';
  const step = schemaAt(propsJsonSchema(component), [{ field: prop }]);
  return step.ok ? typesOf(step.schemas) : 'any';
}

const typeWords = (types: Set<JsonType> | 'any'): string =>
  types === 'any' ? 'any value' : [...types].join(' or ');

function valueType(value: unknown): Set<JsonType> | 'any' {
  if (value === null) return 'any'; // a state that starts empty may hold anything later
  return new Set([Array.isArray(value) ? 'array' : (typeof value as JsonType)]);
}

function checkBinding(
  use: BindingUse,
  document: AppDocument,
  tools: AppToolCatalog,
  problems: ProblemList,
): void {
  const expected = expectedTypes(use.component, use.prop);
  const what = use.prop === null ? 'this input field' : `${use.component.name}.${use.prop}`;
  if ('$state' in use.binding) {
    const key = use.binding.$state;
    if (!own(document.state, key)) {
      problems.add(use.at, `state "${key}" is not declared; declare it under state with its initial value`);
    } else if (!typesFit(valueType(document.state![key]), expected)) {
      problems.add(
        use.at,
        `${what} needs ${typeWords(expected)}, but state "${key}" starts as ${typeWords(valueType(document.state![key]))}`,
      );
    }
    return;
  }
  const target = queryTarget(use.binding.$query, use.binding.path ?? '', use.at, document, tools, problems);
  if (!target) return;
  const step = schemaAt(target.output, target.segments);
  if (!step.ok) {
    problems.add(use.at, missingFieldMessage(target.name, target.tool, step));
    return;
  }
  const actual = typesOf(step.schemas);
  if (!typesFit(actual, expected)) {
    problems.add(
      use.at,
      `${what} needs ${typeWords(expected)}, but "${use.binding.path ?? ''}" of query "${target.name}" is ${typeWords(actual)}`,
    );
  }
}

/** The query a binding names, its tool's output schema and the parsed path; null (with a problem when due) otherwise. */
function queryTarget(
  name: string,
  path: string,
  at: string,
  document: AppDocument,
  tools: AppToolCatalog,
  problems: ProblemList,
): { name: string; tool: string; output: JsonSchema; segments: PathSegment[] } | null {
  if (!own(document.queries, name)) {
    problems.add(
      at,
      `there is no query "${name}"; the queries are ${nameList(Object.keys(document.queries))}`,
    );
    return null;
  }
  const parsed = parsePath(path);
  if (!parsed.ok) {
    problems.add(at, parsed.message);
    return null;
  }
  const tool = document.queries[name]!.tool;
  const output = own(tools, tool) ? tools[tool]!.output : undefined;
  // An unknown tool is reported at its query; a tool without an output schema is checked on a real run.
  if (output === undefined) return null;
  return { name, tool, output, segments: parsed.segments };
}

function missingFieldMessage(
  query: string,
  tool: string,
  step: Extract<ReturnType<typeof schemaAt>, { ok: false }>,
): string {
  const where = step.at === '' ? '' : ` in "${step.at}"`;
  const has =
    step.known.length > 0 ? `; ${step.at === '' ? 'its result' : 'that'} has ${nameList(step.known)}` : '';
  return `query "${query}" (tool ${tool}) returns no "${step.missing}"${where}${has}`;
}

/** A row field must be declared by the rows' item schema (bound rows), or present in some row (literal rows). */
function checkRowField(
  use: RowFieldUse,
  document: AppDocument,
  tools: AppToolCatalog,
  problems: ProblemList,
): void {
  const fieldPath = parsePath(use.field);
  if (!fieldPath.ok) return; // the props schema already refused it
  const where = `${use.component.name} field "${use.field}"`;
  if (Array.isArray(use.rows)) {
    if (use.rows.length > 0 && !use.rows.some((row) => resolvePath(row, fieldPath.segments).found)) {
      problems.add(use.at, `${where} is in none of the rows written at ${use.rowsAt}`);
    }
    return;
  }
  const rows = bindingSchema.safeParse(use.rows);
  if (!rows.success || '$state' in rows.data) return; // state rows are whatever a button put there
  const path = rows.data.path ?? '';
  const target = queryTarget(rows.data.$query, path, use.rowsAt, document, tools, silent);
  if (!target) return;
  const rowsStep = schemaAt(target.output, target.segments);
  if (!rowsStep.ok) return; // reported as the rows binding
  const types = typesOf(rowsStep.schemas);
  if (types !== 'any' && !types.has('array')) return; // reported as a type mismatch of the rows binding
  const step = schemaAt(target.output, [...target.segments, { index: 0 }, ...fieldPath.segments]);
  if (!step.ok) {
    const rowsPath = formatPath(target.segments) || 'the result';
    const has = step.known.length > 0 ? `; there they have ${nameList(step.known)}` : '';
    problems.add(
      use.at,
      `${where}: the rows of query "${target.name}" (${rowsPath}) have no "${step.missing}"${has}`,
    );
  }
}

/** A sink for problems already reported elsewhere. */
const silent = new ProblemList(0);
