/**
 * `service sync [dir]`: loads the host's tools module (bundled as the app's bundler would), normalizes
 * the tools as the wire does and writes `.service/catalog.json`. Against the previous catalog it
 * reports breaking changes; with a URL it asks the running app which saved references use them.
 * It also captures the host's `<Remixable>` wrappers into `.service/remixables.json` and reports
 * the baselines that changed (their remixes drift) or are gone (pruned).
 *
 * Exit 0 (warnings included); 2 unresolved remixable slots (a wrapper that cannot be captured), or
 * breaking changes under --strict; 3 breaking changes that saved references use, under --strict.
 * Overrides naming a tool the catalog lacks are a warning: the app skips such names at boot; an
 * overrides file the app refuses to start on fails (exit 1).
 * Nothing is written unless the exit is 0, so a failed build step keeps failing until fixed.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from '../args.js';
import type { Catalog, CatalogChange } from '../catalog.js';
import { diffCatalogs } from '../catalog.js';
import { CliError } from '../cli-error.js';
import { checkCloudKey } from '../cloud-key.js';
import { importHostModule, resolveHostFile } from '../host-module.js';
import type { CliIo } from '../io.js';
import {
  appDir,
  appUrl,
  CATALOG_PATH,
  configuredAppUrl,
  isObject,
  readConfig,
  readOverrides,
  safeJson,
  WIRE_PATH,
} from '../project.js';
import { captureRemixables } from '../remixable-capture.js';
import {
  diffRemixables,
  REMIXABLES_PATH,
  type RemixablesReport,
  readRemixables,
  remixablesFile,
} from '../remixables.js';

const OPTIONS = {
  strict: 'boolean',
  url: 'string',
  report: 'boolean',
  key: 'string',
  'api-url': 'string',
} as const;

/** Said with every impact, so its zeros are not read as "nothing uses this tool". */
const IMPACT_SCOPE =
  'Impact counts grants and saved apps; not automations: an automation saves a free-text prompt, not the tools it will call.';

interface ToolImpact {
  name: string;
  known: boolean;
  apps: number;
  automations: number;
  grants: number;
}

export interface SyncResult {
  ok: boolean;
  exitCode: 0 | 2 | 3;
  report: {
    catalog: string;
    tools: number;
    changes: CatalogChange[];
    breaking: string[];
    /** Override entries naming a tool the catalog lacks (a warning). */
    staleOverrides: string[];
    remixables: RemixablesReport;
    written: boolean;
  };
  impact: { url: string; tools: ToolImpact[] } | null;
  notes: string[];
}

export async function run(args: string[], io: CliIo): Promise<number> {
  const { options, positionals } = parseArgs('sync', args, OPTIONS, 1);
  if (options.report) {
    const key = (options.key as string | undefined) ?? io.env.SERVICE_API_KEY;
    if (!key)
      throw new CliError(
        'service sync --report needs the cloud key: pass --key svc_… or set SERVICE_API_KEY.',
      );
    checkCloudKey('service sync', key);
    throw new CliError('service sync --report: reporting to the cloud is not available in this version.');
  }
  const dir = appDir(io.cwd, positionals[0]);
  const config = readConfig(dir);
  // A bad --url is a bad option: refused before anything runs, not only once a change breaks.
  if (options.url !== undefined) appUrl(dir, io.env, options.url as string);
  const notes: string[] = [];

  const previous = readCatalog(dir);
  const catalog = await extractCatalog(dir, config.toolsModule);
  const changes = diffCatalogs(previous, catalog);
  const breaking = changes.filter((c) => c.breaking).map((c) => c.tool);
  const staleOverrides = await staleOverrideNames(dir, catalog);
  const capture = await captureRemixables(dir);
  const previousRemixables = readRemixables(dir);
  const remixables = diffRemixables(previousRemixables, capture);

  let impact: SyncResult['impact'] = null;
  const url = configuredAppUrl(dir, io.env, options.url as string | undefined);
  if (url !== undefined && breaking.length > 0) {
    const base = appUrl(dir, io.env, url);
    try {
      impact = { url: base, tools: await fetchImpact(base, breaking) };
      notes.push(IMPACT_SCOPE);
    } catch (error) {
      notes.push(`No impact from ${base}: ${(error as Error).message}`);
    }
  } else if (breaking.length > 0) {
    notes.push(
      'Pass --url (or set SERVICE_URL) to the running app to see which saved references the changes touch.',
    );
  }
  const referenced = (impact?.tools ?? []).some((t) => t.apps + t.automations + t.grants > 0);

  let exitCode: SyncResult['exitCode'] = 0;
  if (options.strict && breaking.length > 0) exitCode = referenced ? 3 : 2;
  if (remixables.problems.length > 0 && exitCode === 0) exitCode = 2;
  if (!options.strict && breaking.length > 0)
    notes.push('Breaking changes: `service sync --strict` (prebuild) fails on them.');

  const written = exitCode === 0;
  if (written) {
    mkdirSync(join(dir, '.service'), { recursive: true });
    writeFileSync(join(dir, CATALOG_PATH), `${JSON.stringify(catalog, null, 2)}\n`);
    // An app with no wrapper gets no file; one whose last wrapper went keeps an emptied file.
    if (remixables.captured.length > 0 || Object.keys(previousRemixables).length > 0) {
      writeFileSync(join(dir, REMIXABLES_PATH), `${JSON.stringify(remixablesFile(capture), null, 2)}\n`);
    }
  }
  const result: SyncResult = {
    ok: exitCode === 0,
    exitCode,
    report: {
      catalog: CATALOG_PATH,
      tools: catalog.tools.length,
      changes,
      breaking,
      staleOverrides,
      remixables,
      written,
    },
    impact,
    notes,
  };
  io.stdout.write(io.json ? `${JSON.stringify(result)}\n` : describe(result));
  return exitCode;
}

async function extractCatalog(dir: string, toolsModule: string): Promise<Catalog> {
  const file = resolveHostFile(dir, toolsModule.startsWith('.') ? toolsModule : `./${toolsModule}`, dir);
  if (!file) throw new CliError(`The tools module ${toolsModule} (from .service/config.json) is missing.`);
  const module = await importHostModule(dir, file);
  const tools = module.tools ?? module.default;
  if (!Array.isArray(tools)) throw new CliError(`${toolsModule} must export \`tools\`, an array of tools.`);
  const { createToolRegistry } = await import('@service/core/agent');
  let registry: ReturnType<typeof createToolRegistry>;
  try {
    registry = createToolRegistry(tools);
  } catch (error) {
    throw new CliError(`${toolsModule}: ${(error as Error).message}`);
  }
  return {
    version: 1,
    tools: registry.all().map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      risk: t.risk,
      audience: t.audience,
      enabled: t.enabled,
      inputSchema: t.inputSchema,
    })),
  };
}

/**
 * The baseline, or null on a first run (no file). A file that is not a catalog (a merge conflict,
 * a bad edit) is refused: read as a first run, it would let breaking changes through `--strict`
 * and be overwritten.
 */
function readCatalog(dir: string): Catalog | null {
  let text: string;
  try {
    text = readFileSync(join(dir, CATALOG_PATH), 'utf8');
  } catch {
    return null;
  }
  const parsed = safeJson(text) as Catalog | undefined;
  if (isObject(parsed) && Array.isArray(parsed.tools)) return parsed;
  throw new CliError(
    `${CATALOG_PATH} in ${dir} is not a catalog (a merge conflict?): restore it from version control, or delete it to take the current tools as the new baseline.`,
  );
}

/**
 * Names in `.service/overrides.json` (surfaces and titles) that no tool of the catalog has. A file
 * the app would refuse (not JSON, or not the overrides schema) fails sync: the app cannot start on it.
 */
async function staleOverrideNames(dir: string, catalog: Catalog): Promise<string[]> {
  const overrides = (await readOverrides(dir))?.overrides;
  const known = new Set(catalog.tools.map((t) => t.name));
  const slots: string[] = [];
  for (const [surface, names] of Object.entries(overrides?.surfaces ?? {})) {
    for (const name of names ?? []) if (!known.has(name)) slots.push(`surfaces.${surface}: ${name}`);
  }
  for (const name of Object.keys(overrides?.tools ?? {})) if (!known.has(name)) slots.push(`tools.${name}`);
  return slots;
}

async function fetchImpact(base: string, tools: string[]): Promise<ToolImpact[]> {
  const response = await fetch(`${base}${WIRE_PATH}/sync/impact`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tools }),
    signal: AbortSignal.timeout(10_000),
  });
  if (response.status === 404) throw new Error('the app is not in development mode (404)');
  if (!response.ok) throw new Error(`answered ${response.status}`);
  const body = (await response.json()) as { tools?: ToolImpact[] };
  if (!Array.isArray(body.tools)) throw new Error('the answer has no tools');
  return body.tools;
}

function describe(result: SyncResult): string {
  const { report } = result;
  const lines = [
    `service sync: ${report.tools} tool${report.tools === 1 ? '' : 's'}${report.written ? ` -> ${report.catalog}` : ' (catalog not written)'}`,
  ];
  for (const change of report.changes) {
    lines.push(
      `  ${change.breaking ? 'breaking' : change.kind.padEnd(8)} ${change.tool}: ${change.details.join(', ')}`,
    );
  }
  for (const tool of result.impact?.tools ?? []) {
    lines.push(
      `  impact   ${tool.name}: ${tool.apps} apps, ${tool.automations} automations, ${tool.grants} grants`,
    );
  }
  const { remixables } = report;
  if (remixables.captured.length > 0) {
    const count = remixables.captured.length;
    lines.push(
      `  remixables: ${count} captured${report.written ? ` -> ${REMIXABLES_PATH}` : ' (not written)'}`,
    );
  }
  for (const change of remixables.changed) {
    lines.push(
      `  changed  remixable ${change.id} (${change.file}:${change.line}): remixes of it will report drift and can be rebased`,
    );
  }
  for (const id of remixables.removed) {
    lines.push(`  removed  remixable ${id}: its wrapper is gone${report.written ? ', pruned' : ''}`);
  }
  for (const problem of remixables.problems) {
    lines.push(`  ${problem.file}:${problem.line}:${problem.column}: ${problem.message}`);
  }
  for (const entry of report.staleOverrides) {
    lines.push(`  warning  override ${entry} names no tool of the catalog; the app skips it`);
  }
  for (const note of result.notes) lines.push(`  note: ${note}`);
  return `${lines.join('\n')}\n`;
}
