/**
 * Finds the host's `<Remixable>` wrappers with the TypeScript compiler (a parse, no type check) and
 * captures each wrapped component's source as a baseline: the text between the tags, normalized,
 * and its sha256. Only an element whose tag is the `Remixable` export of `@service/react` (named,
 * aliased or through a namespace import) counts, so a host component that happens to share the
 * name is left alone. A wrapper that cannot be captured (no literal id, a duplicated id, nothing
 * wrapped) is a problem at its `file:line:col`.
 */
import { createHash } from 'node:crypto';
import { type Dirent, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import type * as TS from 'typescript';

export const REACT_PACKAGE = '@service/react';
const EXPORT_NAME = 'Remixable';
/** Files that may hold JSX. */
const SOURCE_EXTENSIONS = new Set(['.tsx', '.jsx', '.js', '.mjs', '.cjs']);
/** Build output, dependencies and tool folders: never the host's own source. */
const SKIPPED_DIRECTORIES = new Set(['node_modules', 'dist', 'build', 'out', 'coverage']);
/** Past this a file is generated (a bundle), not source a person wraps components in. */
const MAX_FILE_BYTES = 2 * 1024 * 1024;
export const MAX_ID_LENGTH = 128;

export interface Baseline {
  /** The file, relative to the app folder, with `/` separators. */
  file: string;
  /** 1-based line of the wrapper's opening tag. */
  line: number;
  /** sha256 (lowercase hex) of `source`. */
  hash: string;
  /** The wrapped children's source text, normalized. */
  source: string;
}

export interface CaptureProblem {
  file: string;
  line: number;
  column: number;
  message: string;
  /** The wrapper's id, when it has a literal one. */
  id?: string;
}

export interface Capture {
  baselines: Record<string, Baseline>;
  problems: CaptureProblem[];
}

interface Found {
  id: string;
  baseline: Baseline;
  column: number;
}

/** Every wrapper under `dir`, in file order; ids sorted in `baselines`. */
export async function captureRemixables(dir: string): Promise<Capture> {
  // Cheap filter first: only files naming the package can import the wrapper, and the compiler is
  // loaded only when one does.
  const candidates = sourceFiles(dir).flatMap((file) => {
    const text = readFileSync(file, 'utf8');
    return text.includes(REACT_PACKAGE) ? [{ file, text }] : [];
  });
  const problems: CaptureProblem[] = [];
  const found: Found[] = [];
  if (candidates.length > 0) {
    const ts = (await import('typescript')).default;
    for (const { file, text } of candidates) {
      scanFile(ts, displayPath(dir, file), file, text, found, problems);
    }
  }
  const first = new Map<string, Found>();
  const duplicated = new Set<string>();
  for (const entry of found) {
    const earlier = first.get(entry.id);
    if (!earlier) {
      first.set(entry.id, entry);
      continue;
    }
    duplicated.add(entry.id);
    problems.push({
      file: entry.baseline.file,
      line: entry.baseline.line,
      column: entry.column,
      id: entry.id,
      message: `<Remixable> id "${entry.id}" is used twice (first at ${earlier.baseline.file}:${earlier.baseline.line}:${earlier.column}); each wrapper needs its own id`,
    });
  }
  const baselines: Record<string, Baseline> = {};
  for (const id of [...first.keys()].sort()) {
    if (!duplicated.has(id)) baselines[id] = first.get(id)!.baseline;
  }
  return { baselines, problems: sortProblems(problems) };
}

function scanFile(
  ts: typeof TS,
  file: string,
  path: string,
  text: string,
  found: Found[],
  problems: CaptureProblem[],
): void {
  const kind = path.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.JSX;
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const { names, namespaces } = importedWrapper(ts, source);
  if (names.size === 0 && namespaces.size === 0) return;

  const isWrapper = (tag: TS.JsxTagNameExpression): boolean =>
    (ts.isIdentifier(tag) && names.has(tag.text)) ||
    (ts.isPropertyAccessExpression(tag) &&
      ts.isIdentifier(tag.expression) &&
      namespaces.has(tag.expression.text) &&
      tag.name.text === EXPORT_NAME);

  const visit = (node: TS.Node): void => {
    if (ts.isJsxElement(node) && isWrapper(node.openingElement.tagName)) {
      capture(ts, file, source, node.openingElement, node, found, problems);
    } else if (ts.isJsxSelfClosingElement(node) && isWrapper(node.tagName)) {
      capture(ts, file, source, node, null, found, problems);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

/** The local names bound to `Remixable` from the React package, and its namespace imports. */
function importedWrapper(
  ts: typeof TS,
  source: TS.SourceFile,
): { names: Set<string>; namespaces: Set<string> } {
  const names = new Set<string>();
  const namespaces = new Set<string>();
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const from = statement.moduleSpecifier.text;
    if (from !== REACT_PACKAGE && !from.startsWith(`${REACT_PACKAGE}/`)) continue;
    const clause = statement.importClause;
    if (!clause || clause.isTypeOnly || !clause.namedBindings) continue;
    if (ts.isNamespaceImport(clause.namedBindings)) {
      namespaces.add(clause.namedBindings.name.text);
      continue;
    }
    for (const element of clause.namedBindings.elements) {
      if (!element.isTypeOnly && (element.propertyName ?? element.name).text === EXPORT_NAME)
        names.add(element.name.text);
    }
  }
  return { names, namespaces };
}

function capture(
  ts: typeof TS,
  file: string,
  source: TS.SourceFile,
  opening: TS.JsxOpeningElement | TS.JsxSelfClosingElement,
  element: TS.JsxElement | null,
  found: Found[],
  problems: CaptureProblem[],
): void {
  const at = source.getLineAndCharacterOfPosition(opening.getStart(source));
  const line = at.line + 1;
  const column = at.character + 1;
  const problem = (message: string, id?: string) =>
    problems.push({ file, line, column, ...(id === undefined ? {} : { id }), message });

  const id = literalId(ts, opening);
  if (id.kind === 'missing') return void problem('<Remixable> has no id: give it one, id="orders-table"');
  if (id.kind === 'computed')
    return void problem(
      '<Remixable> id must be a string literal (id="orders-table"): sync cannot capture a computed id',
    );
  if (id.value.trim() === '' || id.value.length > MAX_ID_LENGTH)
    return void problem(`<Remixable> id must be 1 to ${MAX_ID_LENGTH} characters, not blank`, id.value);
  if (!element?.children.some((child) => isMeaningful(ts, child)))
    return void problem(
      `<Remixable id="${id.value}"> wraps nothing: its children are the component a person can remix`,
      id.value,
    );

  const closing = element.closingElement.getStart(source);
  // The first line is indented by where it starts in the file, so that dedenting treats a child
  // written on the opening tag's line like the lines below it.
  const openingEnd = source.getLineAndCharacterOfPosition(opening.end).character;
  const text = normalizeSource(' '.repeat(openingEnd) + source.text.slice(opening.end, closing));
  found.push({ id: id.value, column, baseline: { file, line, hash: sourceHash(text), source: text } });
}

type IdProp = { kind: 'missing' } | { kind: 'computed' } | { kind: 'literal'; value: string };

function literalId(ts: typeof TS, opening: TS.JsxOpeningElement | TS.JsxSelfClosingElement): IdProp {
  const attribute = opening.attributes.properties.find(
    (p): p is TS.JsxAttribute => ts.isJsxAttribute(p) && ts.isIdentifier(p.name) && p.name.text === 'id',
  );
  if (!attribute) return { kind: 'missing' };
  const value = attribute.initializer;
  if (value && ts.isStringLiteral(value)) return { kind: 'literal', value: value.text };
  if (
    value &&
    ts.isJsxExpression(value) &&
    value.expression &&
    (ts.isStringLiteral(value.expression) || ts.isNoSubstitutionTemplateLiteral(value.expression))
  )
    return { kind: 'literal', value: value.expression.text };
  return { kind: 'computed' };
}

/** Whitespace between tags and `{/* comments *\/}` wrap nothing. */
function isMeaningful(ts: typeof TS, child: TS.JsxChild): boolean {
  if (ts.isJsxText(child)) return child.text.trim() !== '';
  if (ts.isJsxExpression(child)) return child.expression !== undefined;
  return true;
}

/**
 * The text a baseline hashes: line endings as `\n`, trailing spaces and the blank lines around it
 * dropped, the common indentation removed. So moving the wrapper into a deeper block, or a checkout
 * with other line endings, is not a change; any edit of the wrapped code is.
 */
export function normalizeSource(text: string): string {
  const lines = text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((l) => l.trimEnd());
  while (lines.length > 0 && lines[0] === '') lines.shift();
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const indents = lines.filter((l) => l !== '').map((l) => l.length - l.trimStart().length);
  const common = indents.length > 0 ? Math.min(...indents) : 0;
  return lines.map((l) => l.slice(common)).join('\n');
}

export function sourceHash(normalized: string): string {
  return createHash('sha256').update(normalized, 'utf8').digest('hex');
}

/** Source files under `dir`, sorted, skipping dot folders (`.service`, `.next`, `.git`) and build output. */
function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  const pending = [dir];
  while (pending.length > 0) {
    const current = pending.pop()!;
    let entries: Dirent[];
    try {
      entries = readdirSync(current, { withFileTypes: true });
    } catch {
      continue; // a folder this user may not read holds no source of the app's build either
    }
    for (const entry of entries) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) {
        if (!entry.name.startsWith('.') && !SKIPPED_DIRECTORIES.has(entry.name)) pending.push(path);
      } else if (entry.isFile() && SOURCE_EXTENSIONS.has(extname(entry.name))) {
        if (statSync(path).size <= MAX_FILE_BYTES) files.push(path);
      }
    }
  }
  return files.sort();
}

function displayPath(dir: string, file: string): string {
  return relative(dir, file).split(sep).join('/');
}

function sortProblems(problems: CaptureProblem[]): CaptureProblem[] {
  return problems.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
}
