/**
 * The layer check that `pnpm lint` runs: reads every import of the source tree and fails on one that
 * runs against the layer map of docs/architecture.md, on a route that could reach SQL, on a package
 * that reaches into core past its public subpaths, and on an import cycle.
 *
 * `node --import tsx scripts/check-layers.ts [root]` prints one line per violation and exits 1 when there are any.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The foundation: the store and the web helpers, and what they stand on. */
const FOUNDATION = ['store', 'http', 'schemas', 'internal'];
/** Domain services: identity and events, then what builds on them. */
const DOMAIN = ['identity', 'events', ...FOUNDATION];
const SERVICES = ['billing', 'connections', ...DOMAIN];

/**
 * What each folder of `packages/core/src` may import, lowest layer first. A folder may always import
 * itself; `index.ts` at the root of core is the package face and may import anything.
 */
export const LAYERS: Record<string, string[]> = {
  internal: [],
  schemas: ['internal'],
  store: ['internal'],
  http: ['internal', 'schemas'],
  identity: FOUNDATION,
  events: FOUNDATION,
  apps: DOMAIN,
  billing: DOMAIN,
  connections: DOMAIN,
  catalog: SERVICES,
  proxy: SERVICES,
  agent: ['apps', ...SERVICES],
  automations: ['agent', 'apps', ...SERVICES],
  door: ['agent', 'apps', ...DOMAIN],
  wire: ['door', 'automations', 'agent', 'apps', ...SERVICES],
  deploy: ['catalog', ...SERVICES],
  platform: ['proxy', 'deploy', 'catalog', ...SERVICES],
};

/** Files that answer HTTP requests directly: they get domain services, never SQL. */
const ROUTE_FILE = /(^|\/)(routes|oauth|mcp)\/|^platform\/(cli|dashboard)\/|^door\/router\.ts$/;

/** Packages that may use only these public subpaths of core (the SDK, CLI and React package run without the server). */
const CLIENT_PACKAGES: Record<string, string[]> = {
  sdk: ['schemas'],
  'dev-cli': ['schemas'],
  react: ['apps'],
};

const IMPORT =
  /(?:^|[\n;])\s*(import|export)\s+(type\s+)?(?:[\w*$\s{},]*?\s+from\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every import of a file: `{ specifier, typeOnly }`. Comments are blanked first so examples in docs never count. */
export function importsOf(source: string): { specifier: string; typeOnly: boolean }[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const found: { specifier: string; typeOnly: boolean }[] = [];
  for (const match of code.matchAll(IMPORT)) {
    const specifier = (match[3] ?? match[4]) as string;
    found.push({ specifier, typeOnly: Boolean(match[2]) });
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (/\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
      files.push(path);
  }
  return files;
}

const posix = (path: string): string => path.split(sep).join('/');

/** `../store/x.js` from `identity/y.ts` -> `store/x.ts` (relative to core's src), or null outside src. */
function resolveInCore(srcDir: string, file: string, specifier: string): string | null {
  const target = posix(relative(srcDir, resolve(dirname(file), specifier)));
  if (target.startsWith('..')) return null;
  return target.replace(/\.js$/, '.ts');
}

const folderOf = (path: string): string | null =>
  path.includes('/') ? path.slice(0, path.indexOf('/')) : null;

function allowedText(folder: string): string {
  const allowed = LAYERS[folder] ?? [];
  return allowed.length
    ? `${folder} may import only ${allowed.join(', ')}`
    : `${folder} imports nothing of core`;
}

/** Checks the tree at `root` (the repository root); returns the violations as sentences. */
export function checkLayers(root: string): string[] {
  const violations: string[] = [];
  const srcDir = join(root, 'packages/core/src');
  const graph = new Map<string, string[]>();

  for (const file of sourceFiles(srcDir)) {
    const from = posix(relative(srcDir, file));
    const folder = folderOf(from);
    const edges: string[] = [];
    graph.set(from, edges);
    if (folder && !(folder in LAYERS)) {
      violations.push(`${from}: the folder "${folder}" is not on the layer map (scripts/check-layers.ts)`);
      continue;
    }
    for (const { specifier, typeOnly } of importsOf(readFileSync(file, 'utf8'))) {
      const isRoute = ROUTE_FILE.test(from);
      if (isRoute && (specifier === 'kysely' || specifier.startsWith('kysely/'))) {
        violations.push(`${from}: a route imports kysely; routes call domain services, which own the SQL`);
      }
      if (!specifier.startsWith('.')) continue;
      const target = resolveInCore(srcDir, file, specifier);
      if (target === null) {
        violations.push(`${from}: imports ${specifier}, outside packages/core/src`);
        continue;
      }
      edges.push(target);
      const to = folderOf(target);
      if (isRoute && to === 'store' && !typeOnly) {
        violations.push(`${from}: a route imports ${target}; routes may import only types from the store`);
      }
      if (!folder || !to || to === folder) continue;
      if (!LAYERS[folder]?.includes(to)) {
        violations.push(`${from}: imports ${target} against the layer map (${allowedText(folder)})`);
      }
    }
  }
  violations.push(...cyclesOf(graph).map((cycle) => `import cycle: ${cycle.join(' -> ')}`));
  violations.push(...checkPackages(root));
  return violations;
}

/** Packages and examples reach core only through the subpaths its package.json exports. */
function checkPackages(root: string): string[] {
  const violations: string[] = [];
  const manifest = join(root, 'packages/core/package.json');
  if (!existsSync(manifest)) return violations;
  const exported = Object.keys(JSON.parse(readFileSync(manifest, 'utf8')).exports ?? {}).map((key: string) =>
    key === '.' ? '@service/core' : `@service/core/${key.slice(2)}`,
  );
  const dirs: [string, string][] = [
    ...readdirSync(join(root, 'packages')).map((name): [string, string] => ['packages', name]),
    ...(existsSync(join(root, 'examples')) ? readdirSync(join(root, 'examples')) : []).map(
      (name): [string, string] => ['examples', name],
    ),
  ].filter(([, name]) => name !== 'core');
  for (const [group, name] of dirs) {
    const base = join(root, group, name);
    for (const file of [...sourceFiles(join(base, 'src')), ...sourceFiles(join(base, 'test'))]) {
      const from = posix(relative(root, file));
      for (const { specifier } of importsOf(readFileSync(file, 'utf8'))) {
        if (specifier.startsWith('.')) {
          const target = posix(relative(root, resolve(dirname(file), specifier)));
          // Test suites share one test kit: core's test/support.
          const sharedKit = from.includes('/test/') && target.startsWith('packages/core/test/support/');
          if (!target.startsWith(`${group}/${name}/`) && !sharedKit) {
            violations.push(`${from}: imports ${specifier}, outside its package; use a package name`);
          }
          continue;
        }
        if (!specifier.startsWith('@service/core')) continue;
        if (!exported.includes(specifier)) {
          violations.push(`${from}: imports ${specifier}, which is not a public subpath of @service/core`);
          continue;
        }
        const allowed = group === 'packages' ? CLIENT_PACKAGES[name] : undefined;
        const subpath = specifier.slice('@service/core/'.length);
        if (allowed && !allowed.includes(subpath)) {
          violations.push(
            `${from}: imports ${specifier}; @service/${name} may import only ${allowed.map((s) => `@service/core/${s}`).join(', ')}`,
          );
        }
      }
    }
  }
  return violations;
}

/** Every elementary cycle found by a depth-first walk, each reported once. */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
  const violations = checkLayers(root);
  for (const line of violations) console.error(line);
  if (violations.length > 0) {
    console.error(`\n${violations.length} import(s) against the layer map; see docs/architecture.md`);
    process.exit(1);
  }
  console.log('layers: every import follows the map');
}
