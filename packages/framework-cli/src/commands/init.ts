/**
 * `service init [dir]`: wires the service into a Next.js or Express app. It plans first (the plan
 * is what `--agent` prints), then applies on `--yes` or a confirmation. Host source is only ever
 * created, never overwritten; files under `.service/` are the CLI's and `--force` regenerates
 * them; the store encryption key is provisioned once and never regenerated.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { parseArgs } from '../args.js';
import { CliError } from '../cli-error.js';
import { resolveHostFile } from '../host-module.js';
import { relativeImportExtension, tsconfigOptions, withImportExtension } from '../import-style.js';
import { type CliIo, confirm, interactive } from '../io.js';
import {
  appDir,
  CONFIG_PATH,
  dependenciesOf,
  detectFramework,
  ENCRYPTION_KEY_VARIABLE,
  type Framework,
  GENERATE_KEY_COMMAND,
  isEncryptionKey,
  isObject,
  keepsExternals,
  nextConfigFile,
  nextConfigModule,
  nextExternalsSetting,
  nextMajor,
  readConfig,
  readDotEnv,
  readPackageJson,
  type ServiceConfig,
  sourceRoot,
} from '../project.js';
import {
  AI_RANGE,
  MODEL_MODULE,
  NEXT_PROXY_FILES,
  NEXT_PROXY_MARK,
  nextProxyModule,
  notWiring,
  serviceModuleOf,
  wiringFor,
} from '../templates.js';

const OPTIONS = {
  agent: 'boolean',
  yes: 'boolean',
  force: 'boolean',
  'model-import': 'string',
  brief: 'string',
} as const;

const SCRIPTS = { predev: 'service sync', prebuild: 'service sync --strict' } as const;

/** The model module beside the wiring's service module (`lib/ai.ts` on Next.js). */
const DEFAULT_MODEL_IMPORT = './ai';

type FileAction = 'create' | 'keep' | 'regenerate';

export interface InitPlan {
  dir: string;
  framework: Framework;
  modelImport: string;
  brief: string | null;
  files: Array<{ path: string; owner: 'host' | 'service'; action: FileAction }>;
  env: { file: '.env'; variable: typeof ENCRYPTION_KEY_VARIABLE; action: 'provision' | 'keep' };
  scripts: Array<{ name: keyof typeof SCRIPTS; command: string; action: 'add' | 'keep' | 'differs' }>;
  notes: string[];
}

interface Planned {
  plan: InitPlan;
  contents: Map<string, string>;
}

export async function run(args: string[], io: CliIo): Promise<number> {
  const { options, positionals } = parseArgs('init', args, OPTIONS, 1);
  const dir = appDir(io.cwd, positionals[0]);
  const pkg = readPackageJson(dir);
  if (!pkg) throw new CliError(`No package.json in ${dir}: run service init in the app's folder.`);

  let brief = options.brief as string | undefined;
  // Under --json stdout is one object, so nothing is asked on it.
  const prompting = !options.agent && !options.yes && !io.json && interactive(io);
  if (prompting && brief === undefined) {
    const { createInterface } = await import('node:readline/promises');
    const rl = createInterface({ input: io.stdin, output: io.stdout as NodeJS.WritableStream });
    brief =
      (await rl.question('What is the app’s agent for? (one line, Enter to skip) ')).trim() || undefined;
    rl.close();
  }

  const { plan, contents } = planInit(dir, pkg, {
    modelImport: options['model-import'] as string | undefined,
    brief,
    force: options.force === true,
  });
  if (options.agent) {
    io.stdout.write(`${JSON.stringify(plan, null, 2)}\n`);
    return 0;
  }
  if (!options.yes && io.json) {
    throw new CliError('service init: nothing written: pass --yes to apply (--agent prints the plan alone).');
  }
  if (!io.json) io.stdout.write(describePlan(plan));
  if (!options.yes) {
    if (!interactive(io)) {
      io.stderr.write('Nothing written: pass --yes to apply (there is no terminal to confirm on).\n');
      return 1;
    }
    if (!(await confirm(io, 'Apply?'))) {
      io.stdout.write('Nothing written.\n');
      return 1;
    }
  }
  applyPlan(dir, plan, contents);
  if (io.json) {
    io.stdout.write(`${JSON.stringify({ applied: true, plan })}\n`);
    return 0;
  }
  io.stdout.write(
    `Done. Next: \`service sync\`, start the app, then \`service doctor\`.${
      plan.framework === 'express'
        ? '\nMount the wire in your app: `mountServiceRoutes(app)` from the generated service module.'
        : ''
    }\n`,
  );
  return 0;
}

/** The config an earlier init wrote, when there is a valid one. */
function earlierConfig(dir: string): ServiceConfig | null {
  try {
    return readConfig(dir);
  } catch {
    return null;
  }
}

export function planInit(
  dir: string,
  pkg: Record<string, unknown>,
  options: { modelImport?: string | undefined; brief?: string | undefined; force: boolean },
): Planned {
  const framework = detectFramework(pkg);
  const root = sourceRoot(dir);
  // What an earlier init decided stands unless an option says otherwise: `--force` regenerates
  // the files, it does not forget the model module or the brief the host file imports.
  const earlier = earlierConfig(dir);
  const earlierSpecifier =
    earlier?.modelImport ??
    (framework === 'next' && hasRootAlias(dir, root) ? '@/lib/ai' : DEFAULT_MODEL_IMPORT);
  // The Express wiring runs as the app's own modules do (tsx, or plain Node after tsc): its
  // relative imports are written as the app's setup needs them. A wiring kept keeps its imports,
  // and the model import is recorded as it reads there (an earlier init may have written `./ai.js`).
  const importExtension = framework === 'express' ? relativeImportExtension(dir, pkg) : '';
  const serviceSource = readIfFile(join(dir, serviceModuleOf(framework, root)));
  const asWritten = (specifier: string): string => {
    const extended = withImportExtension(specifier, importExtension);
    return serviceSource === null || quotes(serviceSource, extended) ? extended : specifier;
  };
  const earlierModelImport = asWritten(earlierSpecifier);
  let modelImport = options.modelImport === undefined ? earlierModelImport : asWritten(options.modelImport);
  let brief = options.brief ?? earlier?.brief;
  const wiring = wiringFor({
    framework,
    root,
    modelImport,
    importExtension,
    ...(brief ? { brief } : {}),
  });
  const files: InitPlan['files'] = [];
  const contents = new Map<string, string>();
  const notes: string[] = [];

  const hostFile = (path: string, content: string) => {
    refuseNonFile(dir, path);
    const exists = existsSync(join(dir, path));
    files.push({ path, owner: 'host', action: exists ? 'keep' : 'create' });
    if (!exists) contents.set(path, content);
  };
  for (const file of wiring.files) {
    // A file of the app's own at a wiring path would be kept as the wiring, and compose nothing.
    refuseNonFile(dir, file.path);
    const existing = join(dir, file.path);
    const problem = existsSync(existing) ? notWiring(file.path, readFileSync(existing, 'utf8')) : null;
    if (problem) {
      throw new CliError(
        `${file.path} exists and is not the service wiring (${problem}): init writes the wiring there and never overwrites a file. Move or rename yours (and its imports), then run \`service init\` again. Nothing was written.`,
      );
    }
    hostFile(file.path, file.content);
  }

  // Next.js below 16 must keep the store out of its webpack bundle; an app's own config is never
  // edited, so the setting is written only where there is no config yet.
  const major = framework === 'next' ? nextMajor(dir, pkg) : null;
  if (major !== null && major < 16) {
    const configFile = nextConfigFile(dir);
    if (!configFile) hostFile('next.config.mjs', nextConfigModule(major));
    else if (!keepsExternals(readFileSync(join(dir, configFile), 'utf8'))) {
      notes.push(
        `Next.js ${major} bundles the store with webpack, which breaks it: add \`${nextExternalsSetting(major)}\` to ${configFile} (init never edits it).`,
      );
    }
  }

  // Next.js answers a path it cannot decode with its own 500 before the route handler runs: a
  // proxy (middleware below 16) answers the wire's 400 first. The app's own is never edited.
  if (framework === 'next') {
    const own = NEXT_PROXY_FILES.map((file) => join(root, file)).find((file) => existsSync(join(dir, file)));
    if (own === undefined) {
      const name = major !== null && major < 16 ? 'middleware' : 'proxy';
      hostFile(join(root, `${name}.ts`), nextProxyModule(name));
    } else if (readIfFile(join(dir, own))?.includes(NEXT_PROXY_MARK)) hostFile(own, '');
    else {
      notes.push(
        `${own} is the app's own: Next.js answers a path under /api/service it cannot decode with a 500 before the wire sees it; add to it the check the wire's Next.js documentation gives, which answers 400 instead.`,
      );
    }
  }

  const wiringDir = join(dir, dirname(wiring.serviceModule));
  if (options.modelImport !== undefined) checkModelImport(dir, root, wiringDir, options.modelImport);

  // An existing service module is never rewritten: options that shape it cannot reach it.
  const kept = serviceSource;
  const unapplied = (option: string, what: string) =>
    notes.push(
      `${option} is not applied: ${wiring.serviceModule} exists and init never overwrites it: ${what} yourself.`,
    );
  const imports = (specifier: string) => kept === null || quotes(kept, specifier);
  // An option not applied is not recorded either: the config keeps what the app's files say, since
  // refine acts on it (the module it loads the model from, the brief it sends).
  if (options.modelImport !== undefined && !imports(modelImport)) {
    unapplied(`--model-import ${options.modelImport}`, 'change its model import');
    modelImport = earlierModelImport;
  }
  if (options.brief !== undefined && kept !== null && !kept.includes(JSON.stringify(options.brief.trim()))) {
    unapplied('--brief', 'edit its system prompt');
    brief = earlier?.brief;
  }
  const importsModel = imports(modelImport);

  // The model module: created only when the specifier names a file of this app that is missing
  // and the service module imports it.
  if (importsModel && !resolveHostFile(dir, modelImport, wiringDir)) {
    const target = modelTarget(dir, modelImport, wiringDir);
    if (target) hostFile(target, MODEL_MODULE);
    else notes.push(`${modelImport} is a package: make sure it exports \`model\`.`);
  }

  const config: ServiceConfig = {
    version: 1,
    framework,
    toolsModule: wiring.toolsModule,
    modelImport,
    wiring: wiring.files.map((f) => f.path),
    ...(brief ? { brief } : {}),
  };
  const owned: Array<[string, string]> = [
    [CONFIG_PATH, `${JSON.stringify(config, null, 2)}\n`],
    ['.service/.gitignore', '# The local store and refine transcripts stay on this machine.\ndata/\n'],
  ];
  for (const [path, content] of owned) {
    refuseNonFile(dir, path);
    const exists = existsSync(join(dir, path));
    const action: FileAction = !exists ? 'create' : options.force ? 'regenerate' : 'keep';
    files.push({ path, owner: 'service', action });
    if (action !== 'keep') contents.set(path, content);
  }

  // The wiring imports the service's packages at run time: the CLI alone does not bring them.
  const listed = dependenciesOf(pkg);
  const runtime = ['@service/core', framework === 'next' ? '@service/next' : '@service/express', 'ai'];
  const missing = runtime.filter((name) => !Object.hasOwn(listed, name));
  // `ai` with its range: unpinned, a package manager picks the newest major, which core refuses.
  const install = missing.map((name) => (name === 'ai' ? `ai@${AI_RANGE}` : name));
  if (missing.length > 0) {
    notes.push(
      `The wiring imports ${missing.join(', ')}, which package.json does not list: install ${install.join(' ')} before \`service sync\`.`,
    );
  }
  const listedMajor = /^\D*(\d+)/.exec(listed.ai ?? '')?.[1];
  if (listedMajor !== undefined && `^${listedMajor}` !== AI_RANGE) {
    notes.push(`package.json lists ai ${listed.ai}; the service needs ai@${AI_RANGE}: install that.`);
  }

  refuseNonFile(dir, '.env');
  const key = readDotEnv(dir)[ENCRYPTION_KEY_VARIABLE];
  if (key !== undefined && !isEncryptionKey(key)) {
    notes.push(
      `${ENCRYPTION_KEY_VARIABLE} in .env is not base64 of 32 bytes (several may be comma-separated); it is kept as it is: make one with \`${GENERATE_KEY_COMMAND}\``,
    );
  }

  if (pkg.scripts !== undefined && !isObject(pkg.scripts)) {
    throw new CliError('package.json: "scripts" is not an object: fix it first (nothing was written).');
  }
  const scripts = pkg.scripts ?? {};
  const scriptPlan = (Object.keys(SCRIPTS) as Array<keyof typeof SCRIPTS>).map((name) => {
    const current = scripts[name];
    const action =
      current === undefined
        ? 'add'
        : typeof current === 'string' && current.includes(SCRIPTS[name])
          ? 'keep'
          : 'differs';
    if (action === 'differs') notes.push(`scripts.${name} exists: add \`${SCRIPTS[name]}\` to it yourself.`);
    return { name, command: SCRIPTS[name], action } as const;
  });

  return {
    plan: {
      dir,
      framework,
      modelImport,
      brief: brief ?? null,
      files,
      env: {
        file: '.env',
        variable: ENCRYPTION_KEY_VARIABLE,
        action: key === undefined ? 'provision' : 'keep',
      },
      scripts: scriptPlan,
      notes,
    },
    contents,
  };
}

/** Whether a module's source names `specifier` in quotes (an import of it, as init writes one). */
function quotes(source: string, specifier: string): boolean {
  return [`'${specifier}'`, `"${specifier}"`].some((quoted) => source.includes(quoted));
}

function readIfFile(file: string): string | null {
  return existsSync(file) && statSync(file).isFile() ? readFileSync(file, 'utf8') : null;
}

/**
 * Whether the app's tsconfig.json (else jsconfig.json, as Next.js reads them) maps `@/*` to the
 * source root: only then may the wiring import `@/…`, which the bundler otherwise cannot resolve.
 */
function hasRootAlias(dir: string, root: string): boolean {
  const options = tsconfigOptions(dir);
  if (!options) return false;
  const from = options.baseUrl ?? (options as { pathsBasePath?: string }).pathsBasePath ?? dir;
  return (options.paths?.['@/*'] ?? []).some((target) => resolve(from, target) === join(dir, root, '*'));
}

/**
 * Init writes (or reads) a file at `path`: a folder there, or a file where one of its folders
 * goes, is refused while planning, so nothing is written.
 */
function refuseNonFile(dir: string, path: string): void {
  const parts = path.split('/');
  for (let i = 1; i < parts.length; i++) {
    const folder = parts.slice(0, i).join('/');
    const at = join(dir, folder);
    if (existsSync(at) && !statSync(at).isDirectory()) {
      throw new CliError(
        `${folder} is a file where init needs a folder (for ${path}): move or rename it, then run \`service init\` again. Nothing was written.`,
      );
    }
  }
  const at = join(dir, path);
  if (existsSync(at) && !statSync(at).isFile()) {
    throw new CliError(
      `${path} is a folder where init needs a file: move or rename it, then run \`service init\` again. Nothing was written.`,
    );
  }
}

/** A model module the wiring can import: a package, or a file of this app named relatively or by `@/`. */
function checkModelImport(dir: string, root: string, from: string, specifier: string): void {
  if (isAbsolute(specifier)) {
    throw new CliError(
      `--model-import ${specifier} is an absolute path: name the model module relative to the wiring (./ai), with @/, or as a package.`,
    );
  }
  const base = specifier.startsWith('@/')
    ? join(dir, root, specifier.slice(2))
    : specifier.startsWith('.')
      ? resolve(from, specifier)
      : null;
  const inside = base === null ? '' : relative(dir, base);
  if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    throw new CliError(
      `--model-import ${specifier} names a file outside the app (${base}): keep the model module inside ${dir}.`,
    );
  }
}

/**
 * Where a missing model module goes: the file its specifier names, as TypeScript (the module init
 * writes is TypeScript): `./ai.js` is `ai.ts`, as TypeScript reads the specifier.
 */
function modelTarget(dir: string, specifier: string, from: string): string | null {
  let base: string;
  if (specifier.startsWith('@/')) base = join(dir, sourceRoot(dir), specifier.slice(2));
  else if (specifier.startsWith('.')) base = join(from, specifier);
  else return null;
  const typed = base.replace(/\.([cm]?)js(x?)$/, '.$1ts$2');
  return relative(dir, /\.[cm]?tsx?$/.test(typed) ? typed : `${typed}.ts`);
}

function describePlan(plan: InitPlan): string {
  const lines = [
    `service init: ${plan.framework === 'next' ? 'a Next.js' : 'an Express'} app at ${plan.dir}`,
  ];
  for (const file of plan.files) {
    const kept =
      file.action === 'keep' ? ` (exists${file.owner === 'host' ? ': yours, never overwritten' : ''})` : '';
    lines.push(`  ${file.action.padEnd(10)} ${file.path}${kept}`);
  }
  if (plan.env.action === 'provision') lines.push(`  provision  ${plan.env.variable} in .env`);
  for (const script of plan.scripts) {
    if (script.action === 'add') lines.push(`  add        scripts.${script.name}: ${script.command}`);
  }
  for (const note of plan.notes) lines.push(`  note: ${note}`);
  return `${lines.join('\n')}\n`;
}

function applyPlan(dir: string, plan: InitPlan, contents: Map<string, string>): void {
  for (const [path, content] of contents) {
    const file = join(dir, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
  if (plan.env.action === 'provision') {
    const envFile = join(dir, '.env');
    const current = existsSync(envFile) ? readFileSync(envFile, 'utf8') : '';
    const separator = current === '' || current.endsWith('\n') ? '' : '\n';
    appendFileSync(
      envFile,
      `${separator}# Seals stored credentials: keep it secret, and the same across restarts.\n${ENCRYPTION_KEY_VARIABLE}=${randomBytes(32).toString('base64')}\n`,
      { mode: 0o600 },
    );
  }
  const additions = plan.scripts.filter((s) => s.action === 'add');
  if (additions.length > 0) {
    const pkgFile = join(dir, 'package.json');
    const text = readFileSync(pkgFile, 'utf8');
    const pkg = JSON.parse(text) as Record<string, unknown>;
    const scripts = { ...((pkg.scripts as Record<string, string> | undefined) ?? {}) };
    for (const script of additions) scripts[script.name] = script.command;
    pkg.scripts = scripts;
    const indent = /^\{\n( +|\t)/.exec(text)?.[1] ?? '  ';
    writeFileSync(pkgFile, `${JSON.stringify(pkg, null, indent)}\n`);
  }
}
