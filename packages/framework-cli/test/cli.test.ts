/**
 * The bin's wiring: version, help, unknown commands and options (exit 1 before any action),
 * the cloud commands' answer, the developer commands reached through the same name, and
 * `pnpm exec service` at the repo root running this CLI.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  BIN,
  BUILT,
  baseEnv,
  PACKAGE,
  ROOT,
  readJson,
  runCli,
  runInProcess,
  writeJson,
} from './support/cli.js';

/**
 * Most tests run the command in this process (`runInProcess`): they are about what it answers. A
 * few spawn the bin (`runCli`), one per outcome a process shows: exit 0 with stdout, exit 1 and
 * exit 2 with stderr, an error as JSON on stdout and nothing on stderr, a closed pipe, `pnpm exec
 * service`; and every developer command, which the bin hands to the developer CLI's own process.
 */
const emptyDir = () => mkdtempSync(join(tmpdir(), 'svc-fcli-empty-'));

/** An Express app `service init` has run in: its package and `.service/config.json`, nothing else. */
function initializedExpressApp(): string {
  const dir = emptyDir();
  writeJson(join(dir, 'package.json'), { name: 'shop' });
  writeJson(join(dir, '.service/config.json'), {
    version: 1,
    framework: 'express',
    toolsModule: 'service-tools.ts',
    modelImport: './ai',
    wiring: [],
  });
  return dir;
}

describe.skipIf(!BUILT)('service (framework CLI)', () => {
  it('prints its version (the package version) and its help', async () => {
    const version = await runCli(['--version'], { cwd: emptyDir() });
    expect(version).toMatchObject({
      code: 0,
      stdout: `${readJson(join(PACKAGE, 'package.json')).version}\n`,
    });
    const help = await runInProcess(['--help'], { cwd: emptyDir() });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Framework commands:');
    expect(help.stdout).toContain('init [dir]');
    const sync = await runInProcess(['sync', '--help'], { cwd: emptyDir() });
    expect(sync.stdout).toContain('--strict');
  });

  it('answers service alone with the help and exit 2, as the developer CLI does', async () => {
    const result = await runCli([], { cwd: emptyDir() });
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('Framework commands:');
  });

  it('answers an unknown option where a command goes as one, and reads past a leading --', async () => {
    const bogus = await runInProcess(['--bogus'], { cwd: emptyDir() });
    expect(bogus).toMatchObject({ code: 2, stderr: expect.stringMatching(/^Unknown option: --bogus\n/) });
    // A developer command runs in a child process of its own: through the bin, as the shell runs it.
    const ended = await runCli(['--', 'whoami', '--help'], { cwd: emptyDir() });
    expect(ended.code).toBe(0);
    expect(ended.stdout).toMatch(/Usage: service whoami/);
  });

  it("refuses a word after service help <command> as a usage error (exit 2), for both CLIs' commands", async () => {
    for (const command of ['sync', 'ssh']) {
      const result = await runInProcess(['help', command, 'extra'], { cwd: emptyDir() });
      expect(result).toMatchObject({
        code: 2,
        stdout: '',
        stderr: expect.stringMatching(/^Unexpected argument: extra \(service help takes one command\)\n\n/),
      });
    }
    const json = await runInProcess(['help', 'sync', 'extra', '--json'], { cwd: emptyDir() });
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({
      error: { message: 'Unexpected argument: extra (service help takes one command)', exitCode: 2 },
    });
  });

  it('answers an unknown command with Unknown command and exit 2', async () => {
    const result = await runCli(['frobnicate'], { cwd: emptyDir() });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^Unknown command: frobnicate\n/);
  });

  it.each([
    ['init', '--bogus'],
    ['init', '--yes', '-x'],
    ['sync', '--strict', '--nope'],
    ['doctor', '--url=http://x'],
    ['refine', '--yes', '--wat'],
    ['mcp', 'server-json', '--domain', 'example.com', '--bogus'],
    ['mcp', 'verify-domain', '--domain', 'example.com', '--key-out', 'k', '--bogus'],
  ])('exits 1 on an unknown option before any action: %s %s', async (...args) => {
    const dir = emptyDir();
    const result = await runInProcess(args, { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unknown option/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it.each([
    ['next and express both: next wins', { next: '^16.0.0', express: '^5.0.0' }, 'next'],
    ['neither: next, the fallback', {}, 'next'],
    ['express alone', { express: '^5.0.0' }, 'express'],
  ])('detects the framework from package.json, %s', async (_case, dependencies, framework) => {
    const dir = emptyDir();
    writeJson(join(dir, 'package.json'), { name: 'app', dependencies });
    const result = await runInProcess(['init', '--agent'], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).framework).toBe(framework);
  });

  it('init notes the runtime packages the wiring imports that package.json does not list', async () => {
    const bare = emptyDir();
    writeJson(join(bare, 'package.json'), { name: 'app', dependencies: { express: '^5.0.0' } });
    const plan = JSON.parse((await runInProcess(['init', '--agent'], { cwd: bare })).stdout);
    // ai with the major core depends on: unpinned, a package manager installs one core refuses.
    const coreMajor = /^\^(\d+)\./.exec(
      readJson<{ dependencies: { ai: string } }>(join(ROOT, 'packages/core/package.json')).dependencies.ai,
    )![1];
    expect(plan.notes).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `imports @service/core, @service/express, ai, which package\\.json does not list: install @service/core @service/express ai@\\^${coreMajor} `,
        ),
      ),
    );
    const ready = emptyDir();
    writeJson(join(ready, 'package.json'), {
      name: 'app',
      dependencies: { next: '^16.0.0', '@service/core': '*', '@service/next': '*' },
      devDependencies: { ai: '^6.0.0' },
    });
    const readyPlan = JSON.parse((await runInProcess(['init', '--agent'], { cwd: ready })).stdout);
    expect(readyPlan.notes.filter((note: string) => note.includes('wiring imports'))).toEqual([]);
    writeJson(join(ready, 'package.json'), {
      name: 'app',
      dependencies: { next: '^16.0.0', '@service/core': '*', '@service/next': '*', ai: '^7.0.0' },
    });
    const newerPlan = JSON.parse((await runInProcess(['init', '--agent'], { cwd: ready })).stdout);
    expect(newerPlan.notes).toContain(
      `package.json lists ai ^7.0.0; the service needs ai@^${coreMajor}: install that.`,
    );
  });

  it('init writes the proxy that answers a path Next.js cannot decode (middleware below 16), and never edits the app’s own', async () => {
    const planned = async (next: string, own?: [string, string]) => {
      const dir = emptyDir();
      writeJson(join(dir, 'package.json'), { name: 'app', dependencies: { next } });
      mkdirSync(join(dir, 'src'));
      if (own) writeFileSync(join(dir, own[0]), own[1]);
      const result = await runInProcess(['init', '--agent'], { cwd: dir });
      expect(result.code, result.stderr).toBe(0);
      const plan = JSON.parse(result.stdout) as {
        files: { path: string; action: string }[];
        notes: string[];
      };
      return {
        files: plan.files.filter((f) => /(proxy|middleware)\.[jt]s$/.test(f.path)),
        notes: plan.notes.filter((note) => note.includes('cannot decode')),
      };
    };
    expect(await planned('^16.0.0')).toEqual({
      files: [{ path: 'src/proxy.ts', owner: 'host', action: 'create' }],
      notes: [],
    });
    expect((await planned('^15.3.0')).files).toEqual([
      { path: 'src/middleware.ts', owner: 'host', action: 'create' },
    ]);
    expect(await planned('^16.0.0', ['src/middleware.ts', 'export function middleware() {}\n'])).toEqual({
      files: [],
      notes: [
        expect.stringMatching(
          /^src\/middleware\.ts is the app's own: Next\.js answers a path under \/api\/service it cannot decode with a 500/,
        ),
      ],
    });

    const dir = emptyDir();
    writeJson(join(dir, 'package.json'), { name: 'app', dependencies: { next: '^16.0.0' } });
    expect((await runInProcess(['init', '--yes'], { cwd: dir })).code).toBe(0);
    const written = readFileSync(join(dir, 'proxy.ts'), 'utf8');
    expect(written).toContain("matcher: ['/api/service/:path*', '/.well-known/:path*']");
    const again = JSON.parse((await runInProcess(['init', '--agent', '--force'], { cwd: dir })).stdout);
    expect(again.files).toContainEqual({ path: 'proxy.ts', owner: 'host', action: 'keep' });
    expect(readFileSync(join(dir, 'proxy.ts'), 'utf8')).toBe(written);
  });

  it('init keeps the store outside webpack on Next.js below 16: writes next.config.mjs when there is none, else says what to add', async () => {
    const setting = "serverExternalPackages: ['@service/core', '@electric-sql/pglite']";
    const fresh = emptyDir();
    writeJson(join(fresh, 'package.json'), { name: 'app', dependencies: { next: '^15.5.0' } });
    expect((await runInProcess(['init', '--yes'], { cwd: fresh, env: baseEnv() })).code).toBe(0);
    expect(readFileSync(join(fresh, 'next.config.mjs'), 'utf8')).toContain(`  ${setting},\n`);

    const own = emptyDir();
    writeJson(join(own, 'package.json'), { name: 'app', dependencies: { next: '^15.5.0' } });
    const config = 'module.exports = { reactStrictMode: true };\n';
    writeFileSync(join(own, 'next.config.js'), config);
    const plan = JSON.parse((await runInProcess(['init', '--agent'], { cwd: own })).stdout);
    expect(plan.notes).toContain(
      `Next.js 15 bundles the store with webpack, which breaks it: add \`${setting}\` to next.config.js (init never edits it).`,
    );
    expect(plan.files.map((f: { path: string }) => f.path)).not.toContain('next.config.mjs');
    expect((await runInProcess(['init', '--yes'], { cwd: own, env: baseEnv() })).code).toBe(0);
    expect(readFileSync(join(own, 'next.config.js'), 'utf8')).toBe(config);

    // Next.js 14 names the setting under experimental; 16 (Turbopack) needs none.
    writeJson(join(own, 'package.json'), { name: 'app', dependencies: { next: '14.2.0' } });
    expect(JSON.parse((await runInProcess(['init', '--agent'], { cwd: own })).stdout).notes).toContainEqual(
      expect.stringContaining(
        "`experimental: { serverComponentsExternalPackages: ['@service/core', '@electric-sql/pglite'] }`",
      ),
    );
    const current = emptyDir();
    writeJson(join(current, 'package.json'), { name: 'app', dependencies: { next: '^16.0.0' } });
    const currentPlan = JSON.parse((await runInProcess(['init', '--agent'], { cwd: current })).stdout);
    expect(currentPlan.files.map((f: { path: string }) => f.path)).not.toContain('next.config.mjs');
    expect(currentPlan.notes).not.toContainEqual(expect.stringContaining('webpack'));
  });

  it('doctor fails a Next.js app below 16 whose config does not keep the store outside webpack', async () => {
    const dir = emptyDir();
    writeJson(join(dir, 'package.json'), { name: 'app', dependencies: { next: '^15.0.0' } });
    writeJson(join(dir, '.service/config.json'), {
      version: 1,
      framework: 'next',
      toolsModule: 'tools.ts',
      modelImport: './ai',
      wiring: [],
    });
    writeJson(join(dir, 'node_modules/next/package.json'), { name: 'next', version: '15.5.4' });
    const offline = baseEnv({ SERVICE_URL: 'http://127.0.0.1:9' });
    const doctor = async () => (await runInProcess(['doctor'], { cwd: dir, env: offline })).stdout;
    expect(await doctor()).toContain(
      "✗ Next.js 15 bundles the store with webpack, which breaks it (every wire request answers 503): add `serverExternalPackages: ['@service/core', '@electric-sql/pglite']` to next.config.mjs\n",
    );
    writeFileSync(
      join(dir, 'next.config.ts'),
      "export default { serverExternalPackages: ['@electric-sql/pglite'] };\n",
    );
    expect(await doctor()).toContain('to next.config.ts\n');
    writeFileSync(
      join(dir, 'next.config.ts'),
      "export default { serverExternalPackages: ['@service/core', '@electric-sql/pglite'] };\n",
    );
    expect(await doctor()).toContain(
      '✓ next.config.ts keeps @service/core and @electric-sql/pglite outside the webpack bundle\n',
    );
    writeJson(join(dir, 'node_modules/next/package.json'), { name: 'next', version: '16.0.1' });
    rmSync(join(dir, 'next.config.ts'));
    expect(await doctor()).not.toContain('webpack');
  });

  it('doctor fails an installed ai of another major than core needs, naming the install', async () => {
    const dir = emptyDir();
    writeJson(join(dir, 'node_modules/@service/core/package.json'), {
      name: '@service/core',
      dependencies: { ai: '^6.0.326' },
    });
    const offline = baseEnv({ SERVICE_URL: 'http://127.0.0.1:9' });
    const doctor = async () => (await runInProcess(['doctor'], { cwd: dir, env: offline })).stdout;
    expect(await doctor()).toContain(
      '! ai is not installed in the app; @service/core needs ai ^6.0.326: run `npm install ai@^6`',
    );
    for (const [version, line] of [
      ['7.0.173', '✗ ai 7.0.173 is installed; @service/core needs ai ^6.0.326: run `npm install ai@^6`'],
      ['6.0.100', '✗ ai 6.0.100 is installed; @service/core needs ai ^6.0.326: run `npm install ai@^6`'],
      ['6.1.0', '✓ ai 6.1.0 (@service/core needs ai ^6.0.326)'],
    ]) {
      writeJson(join(dir, 'node_modules/ai/package.json'), { name: 'ai', version });
      expect(await doctor()).toContain(`${line}\n`);
    }
    // The install in the app's package manager, known by its lockfile.
    writeJson(join(dir, 'node_modules/ai/package.json'), { name: 'ai', version: '7.0.173' });
    writeFileSync(join(dir, 'pnpm-lock.yaml'), "lockfileVersion: '9.0'\n");
    expect(await doctor()).toContain('run `pnpm add ai@^6`\n');
    rmSync(join(dir, 'pnpm-lock.yaml'));
    writeFileSync(join(dir, 'yarn.lock'), '');
    expect(await doctor()).toContain('run `yarn add ai@^6`\n');
  });

  it.each([
    ['no tsconfig', null, false, './ai', 'lib/ai.ts'],
    ['a tsconfig without paths', '{ "compilerOptions": { "strict": true } }', false, './ai', 'lib/ai.ts'],
    [
      'a tsconfig (with comments) mapping @/* to the app folder',
      '{\n  // Next.js\n  "compilerOptions": { "paths": { "@/*": ["./*"] } },\n}\n',
      false,
      '@/lib/ai',
      'lib/ai.ts',
    ],
    [
      '@/* to src/',
      '{ "compilerOptions": { "paths": { "@/*": ["./src/*"] } } }',
      true,
      '@/lib/ai',
      'src/lib/ai.ts',
    ],
    [
      '@/* not to src/, which the app has',
      '{ "compilerOptions": { "paths": { "@/*": ["./*"] } } }',
      true,
      './ai',
      'src/lib/ai.ts',
    ],
  ])(
    'on Next.js, init imports the model through @/ only when the app maps it: %s',
    async (_case, tsconfig, src, modelImport, file) => {
      const dir = emptyDir();
      writeJson(join(dir, 'package.json'), { name: 'app', dependencies: { next: '^16.0.0' } });
      if (tsconfig) writeFileSync(join(dir, 'tsconfig.json'), tsconfig);
      if (src) mkdirSync(join(dir, 'src'));
      const result = await runInProcess(['init', '--yes', '--json'], { cwd: dir });
      expect(result.code, result.stdout).toBe(0);
      expect(JSON.parse(result.stdout).plan.modelImport).toBe(modelImport);
      const root = src ? 'src/' : '';
      expect(readFileSync(join(dir, `${root}lib/service.ts`), 'utf8')).toMatch(
        new RegExp(`import \\{ model \\} from ['"]${modelImport}['"];`),
      );
      expect(readFileSync(join(dir, file), 'utf8')).toContain('export const model');
    },
  );

  it('init refuses an app’s own service.ts as the wiring, lists what it keeps, and doctor checks it', async () => {
    const dir = emptyDir();
    writeJson(join(dir, 'package.json'), { name: 'shop', dependencies: { express: '^5.0.0' } });
    const own = 'export const userService = { find: (id: string) => id };\n';
    writeFileSync(join(dir, 'service.ts'), own);
    const refused = await runInProcess(['init', '--yes'], { cwd: dir });
    expect(refused).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(
        /^service\.ts exists and is not the service wiring \(it does not import @service\/core nor call createService\).*Move or rename yours/,
      ),
    });
    expect(readdirSync(dir).sort()).toEqual(['package.json', 'service.ts']);

    writeFileSync(join(dir, 'user-service.ts'), own);
    rmSync(join(dir, 'service.ts'));
    expect((await runInProcess(['init', '--yes'], { cwd: dir })).code).toBe(0);
    const again = await runInProcess(['init', '--yes'], { cwd: dir });
    expect(again.stdout).toContain('  keep       service.ts (exists: yours, never overwritten)\n');
    expect(again.stdout).toContain('  keep       .service/config.json (exists)\n');

    const offline = baseEnv({ SERVICE_URL: 'http://127.0.0.1:9' });
    expect((await runInProcess(['doctor'], { cwd: dir, env: offline })).stdout).toContain(
      '✓ wiring: service.ts\n',
    );
    writeFileSync(join(dir, 'service.ts'), own);
    const doctor = await runInProcess(['doctor'], { cwd: dir, env: offline });
    expect(doctor.stdout).toContain(
      '✗ wiring: service.ts does not compose the service: it does not import @service/core nor call createService\n',
    );
  });

  it('init quotes the model import, refuses one outside the app, and says which options an existing wiring keeps out', async () => {
    const dir = emptyDir();
    writeJson(join(dir, 'package.json'), { name: 'shop', dependencies: { express: '^5.0.0' } });
    for (const [specifier, message] of [
      ['../../outside/ai', /--model-import \.\.\/\.\.\/outside\/ai names a file outside the app/],
      ['@/../x', /names a file outside the app/],
      ['/abs/ai', /--model-import \/abs\/ai is an absolute path/],
    ] as const) {
      const refused = await runInProcess(['init', '--yes', '--model-import', specifier], { cwd: dir });
      expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(message) });
      expect(readdirSync(dir)).toEqual(['package.json']);
    }

    const quoted = await runInProcess(['init', '--yes', '--model-import', "./it's"], { cwd: dir });
    expect(quoted.code, quoted.stderr).toBe(0);
    expect(readFileSync(join(dir, 'service.ts'), 'utf8')).toContain(`import { model } from "./it's";`);
    expect(readFileSync(join(dir, "it's.ts"), 'utf8')).toContain('export const model');

    const again = await runInProcess(
      ['init', '--yes', '--brief', 'Takes orders', '--model-import', './other'],
      {
        cwd: dir,
      },
    );
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(
      'note: --model-import ./other is not applied: service.ts exists and init never overwrites it: change its model import yourself.',
    );
    expect(again.stdout).toContain('note: --brief is not applied: service.ts exists');
    expect(again.stdout).not.toMatch(/create +other\.ts/);
    expect(readdirSync(dir)).not.toContain('other.ts');
  });

  it('exits 1 on a missing option value and a surplus argument', async () => {
    expect((await runInProcess(['init', '--model-import'], { cwd: emptyDir() })).stderr).toMatch(
      /needs a value/,
    );
    const surplus = await runInProcess(['sync', 'a', 'b'], { cwd: emptyDir() });
    expect(surplus).toMatchObject({ code: 1, stderr: expect.stringMatching(/unexpected argument b/) });
  });

  it('refuses an empty word for the folder, the command or the mcp subcommand, saying it is empty', async () => {
    const dir = emptyDir();
    writeJson(join(dir, 'package.json'), { name: 'app', dependencies: { express: '^5.0.0' } });
    // An empty folder is not this folder: init would wire an app the line never named.
    for (const command of ['init', 'sync', 'doctor', 'refine']) {
      const result = await runInProcess(command === 'init' ? [command, '', '--yes'] : [command, ''], {
        cwd: dir,
        env: baseEnv({ SERVICE_URL: 'http://127.0.0.1:9' }),
      });
      expect(result, command).toMatchObject({
        code: 1,
        stderr: "The folder named on the line is empty: name the app's folder, or leave it out.\n",
      });
    }
    expect(existsSync(join(dir, '.service'))).toBe(false);
    for (const args of [[''], ['help', '']]) {
      const result = await runInProcess(args, { cwd: dir });
      expect(result).toMatchObject({
        code: 2,
        stderr: expect.stringMatching(/^The command is empty: name one \(service --help lists them\)\n/),
      });
    }
    expect(await runInProcess(['mcp', ''], { cwd: dir })).toMatchObject({
      code: 1,
      stderr: 'service mcp: the subcommand is empty: server-json or verify-domain.\n',
    });
  });

  it('reads what follows -- as arguments, even when they start with a dash', async () => {
    const dir = emptyDir();
    writeJson(join(dir, 'package.json'), { name: 'app' });
    const init = await runInProcess(['init', '--agent', '--', '-weird'], { cwd: dir });
    expect(init).toMatchObject({ code: 1, stderr: expect.stringMatching(/^No such folder: .*\/-weird\n/) });
    const sync = await runInProcess(['sync', '--', '--strict'], { cwd: dir });
    expect(sync.stderr).toMatch(/^No such folder: .*\/--strict\n/);
    const surplus = await runInProcess(['sync', '--', 'a', 'b'], { cwd: dir });
    expect(surplus.stderr).toMatch(/unexpected argument b/);
  });

  it.each([
    ['login', 'me@example.com'],
    ['logout'],
    ['whoami'],
    ['keys', 'list'],
    ['deploy', '--app', 'x'],
    [],
  ])('answers service cloud %s with "not available in this version" and exit 1', async (...sub) => {
    const result = await runInProcess(['cloud', ...sub], { cwd: emptyDir() });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/not available in this version/);
    expect(result.stderr).not.toMatch(/Unknown command/);
  });

  it('never prints a cloud key, and refuses a malformed one before anything else', async () => {
    const key = `svc_${'ab'.repeat(20)}`;
    for (const args of [
      ['cloud', '--key', key, 'deploy'],
      ['cloud', '--api-url', 'https://cloud.example.com', '--key', key, 'deploy'],
      ['--json', 'cloud', '--key', key, 'deploy'],
      ['cloud', key],
    ]) {
      const result = await runInProcess(args, { cwd: emptyDir() });
      expect(result.code).toBe(1);
      expect(result.stdout + result.stderr).not.toContain(key);
      expect(result.stdout + result.stderr).not.toContain('example.com');
    }
    const deploy = await runInProcess(['cloud', '--key', key, 'deploy'], { cwd: emptyDir() });
    expect(deploy.stderr).toMatch(/^service cloud deploy: the cloud commands are not available/);
    for (const malformed of ['bad', `svc_${'a'.repeat(39)}`, `svc_${'g'.repeat(40)}`]) {
      const result = await runInProcess(['cloud', 'deploy', '--key', malformed], { cwd: emptyDir() });
      expect(result).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/cloud key is svc_ followed by 40 hex/),
      });
    }
    const fromEnv = await runInProcess(['cloud', 'publish'], {
      cwd: emptyDir(),
      env: { ...baseEnv(), SERVICE_API_KEY: 'nope' },
    });
    expect(fromEnv.stderr).toMatch(/cloud key is svc_ followed by 40 hex/);
    const unknown = await runInProcess(['cloud', 'frobnicate'], { cwd: emptyDir() });
    expect(unknown).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/unknown subcommand frobnicate/),
    });
  });

  it.each([
    ['not JSON', '{bad', /package\.json in .* is not valid JSON/],
    ['a string', '"hello"', /package\.json in .* is not a JSON object/],
    ['an array', '[]', /package\.json in .* is not a JSON object/],
    ['scripts as a string', '{"name":"z","scripts":"nope"}', /"scripts" is not an object/],
  ])('refuses a package.json that is %s before writing anything', async (_case, text, message) => {
    const dir = emptyDir();
    writeFileSync(join(dir, 'package.json'), text);
    const result = await runInProcess(['init', '--yes'], { cwd: dir });
    expect(result).toMatchObject({ code: 1, stderr: expect.stringMatching(message) });
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(readdirSync(dir)).toEqual(['package.json']);
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(text);
  });

  it('init --force regenerates the files and keeps what an earlier init decided', async () => {
    const dir = emptyDir();
    writeJson(join(dir, 'package.json'), { name: 'shop', dependencies: { express: '^5.0.0' } });
    const first = await runInProcess(
      ['init', '--yes', '--model-import', './mymodel', '--brief', 'Answers shop questions'],
      {
        cwd: dir,
      },
    );
    expect(first.code, first.stderr).toBe(0);
    const again = await runInProcess(['init', '--yes', '--force'], { cwd: dir });
    expect(again.code, again.stderr).toBe(0);
    expect(readJson(join(dir, '.service/config.json'))).toMatchObject({
      modelImport: './mymodel',
      brief: 'Answers shop questions',
    });
    // No second model module beside the one the host file imports.
    expect(readdirSync(dir).filter((name) => name.startsWith('ai.'))).toEqual([]);
    // An option the kept service module keeps out is not recorded either: refine acts on the config.
    const unapplied = await runInProcess(
      ['init', '--yes', '--force', '--brief', 'Takes orders', '--model-import', './other-ai'],
      { cwd: dir },
    );
    expect(unapplied.code, unapplied.stderr).toBe(0);
    expect(unapplied.stdout).toContain('note: --model-import ./other-ai is not applied: service.ts exists');
    expect(unapplied.stdout).toContain('note: --brief is not applied: service.ts exists');
    expect(readJson(join(dir, '.service/config.json'))).toMatchObject({
      modelImport: './mymodel',
      brief: 'Answers shop questions',
    });
    // An option given again wins where init writes the service module anew.
    rmSync(join(dir, 'service.ts'));
    await runInProcess(['init', '--yes', '--force', '--brief', 'Takes orders'], { cwd: dir });
    expect(readFileSync(join(dir, 'service.ts'), 'utf8')).toContain('"Takes orders"');
    expect(readJson(join(dir, '.service/config.json'))).toMatchObject({
      modelImport: './mymodel',
      brief: 'Takes orders',
    });
  });

  it('exits 1 with a clear message on a folder that is no app, and on a URL that is not http(s)', async () => {
    const noApp = await runCli(['init', '--yes'], { cwd: emptyDir() });
    expect(noApp).toMatchObject({ code: 1, stderr: expect.stringMatching(/No package.json/) });
    const missing = await runInProcess(['init', 'nowhere', '--yes'], { cwd: emptyDir() });
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringMatching(/No such folder/) });
    const notInit = await runInProcess(['sync'], { cwd: emptyDir() });
    expect(notInit).toMatchObject({ code: 1, stderr: expect.stringMatching(/run `service init` first/) });
    const badUrl = await runInProcess(['doctor'], {
      cwd: emptyDir(),
      env: baseEnv({ SERVICE_URL: 'file:///etc/passwd' }),
    });
    expect(badUrl).toMatchObject({ code: 1, stderr: expect.stringMatching(/Not an http\(s\) URL/) });
  });

  it('refuses a folder that is not there, or a file, on every command that reads the app, before anything runs', async () => {
    const dir = emptyDir();
    writeFileSync(join(dir, 'notes.txt'), 'x');
    for (const command of ['init', 'sync', 'doctor', 'refine']) {
      const missing = await runInProcess([command, 'nowhere'], { cwd: dir });
      expect(missing).toMatchObject({
        code: 1,
        stdout: '',
        stderr: `No such folder: ${join(dir, 'nowhere')}\n`,
      });
      const file = await runInProcess([command, 'notes.txt'], { cwd: dir });
      expect(file).toMatchObject({
        code: 1,
        stdout: '',
        stderr: `${join(dir, 'notes.txt')} is a file, not a folder: name the app's folder.\n`,
      });
    }
  });

  it('init refuses a folder where it writes a file, or a file where it needs a folder, writing nothing', async () => {
    const cases: Array<[string, (dir: string) => void, RegExp]> = [
      ['.env', (dir) => mkdirSync(join(dir, '.env')), /^\.env is a folder where init needs a file/],
      [
        'service.ts',
        (dir) => mkdirSync(join(dir, 'service.ts')),
        /^service\.ts is a folder where init needs a file/,
      ],
      [
        '.service',
        (dir) => writeFileSync(join(dir, '.service'), 'x'),
        /^\.service is a file where init needs a folder \(for \.service\/config\.json\)/,
      ],
    ];
    for (const [, make, message] of cases) {
      const dir = emptyDir();
      writeJson(join(dir, 'package.json'), { name: 'shop', dependencies: { express: '^5.3.0' } });
      make(dir);
      const before = readdirSync(dir).sort();
      const init = await runInProcess(['init', '--yes'], { cwd: dir });
      expect(init).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(message) });
      expect(init.stderr).toMatch(/Nothing was written\.\n$/);
      expect(readdirSync(dir).sort()).toEqual(before);
    }
  });

  it('sync refuses a --url that is not the app’s base URL before loading the tools', async () => {
    const dir = initializedExpressApp();
    const notUrl = await runInProcess(['sync', '--url', 'localhost:3000'], { cwd: dir });
    expect(notUrl).toMatchObject({ code: 1, stderr: 'Not an http(s) URL: localhost:3000\n' });
    const query = await runInProcess(['sync', '--url', 'http://localhost:3000/?x=1'], { cwd: dir });
    expect(query).toMatchObject({ code: 1, stderr: expect.stringMatching(/has a query or fragment/) });
    // Credentials in it are refused, and never printed back.
    const secret = await runInProcess(['doctor'], {
      cwd: dir,
      env: { ...baseEnv(), SERVICE_URL: 'http://user:hunter2@localhost:3123' },
    });
    expect(secret.code).toBe(1);
    expect(secret.stdout + secret.stderr).toContain(
      'has a user name or password in it, which the commands never send; give http://localhost:3123.',
    );
    expect(secret.stderr + secret.stdout).not.toContain('hunter2');
  });

  it('refuses an app URL that already ends with the wire’s path /api/service, naming the one to give', async () => {
    const dir = initializedExpressApp();
    const message = (url: string) =>
      `Not the app's base URL: ${url} ends with the wire's path /api/service, which the commands add: give http://localhost:3000.\n`;
    for (const url of ['http://localhost:3000/api/service', 'http://localhost:3000/api/service/']) {
      const sync = await runInProcess(['sync', '--url', url], { cwd: dir });
      expect(sync).toMatchObject({ code: 1, stderr: message(url) });
    }
    const doctor = await runInProcess(['doctor'], {
      cwd: dir,
      env: baseEnv({ SERVICE_URL: 'http://localhost:3000/api/service' }),
    });
    expect(doctor).toMatchObject({
      code: 1,
      stdout: '',
      stderr: message('http://localhost:3000/api/service'),
    });
    // An app served under a path of its own keeps it.
    const mounted = await runInProcess(['doctor', '--json'], {
      cwd: dir,
      env: baseEnv({ SERVICE_URL: 'http://127.0.0.1:9/shop' }),
    });
    expect(JSON.parse(mounted.stdout)).toMatchObject({ url: 'http://127.0.0.1:9/shop' });
  });

  it('refine refuses an overrides file the app refuses to start on, before asking a model', async () => {
    const dir = initializedExpressApp();
    writeJson(join(dir, '.service/catalog.json'), { version: 1, tools: [] });
    for (const [text, problem] of [
      ['[]', 'file: Invalid input: expected object, received array'],
      ['{"tools":5}', 'tools: Invalid input: expected record, received number'],
      ['', 'not valid JSON'],
    ]) {
      writeFileSync(join(dir, '.service/overrides.json'), text!);
      const refine = await runInProcess(['refine', '--yes'], { cwd: dir });
      expect(refine).toMatchObject({
        code: 1,
        stdout: '',
        stderr: `.service/overrides.json: ${problem}: the app refuses to start on it; fix or remove it.\n`,
      });
      expect(readFileSync(join(dir, '.service/overrides.json'), 'utf8')).toBe(text);
    }
  });

  it('doctor reads a blank SERVICE_URL (environment or .env) as unset: the default app, not a bad URL', async () => {
    const dir = emptyDir();
    writeFileSync(join(dir, '.env'), 'SERVICE_URL=\n');
    for (const env of [baseEnv(), baseEnv({ SERVICE_URL: ' ' })]) {
      const doctor = await runInProcess(['doctor', '--json'], { cwd: dir, env });
      expect(doctor.stderr).toBe('');
      expect(JSON.parse(doctor.stdout)).toMatchObject({ url: 'http://localhost:3000', exitCode: 1 });
    }
  });

  it('hands the developer commands to the developer CLI', async () => {
    const result = await runCli(['whoami', '--help'], { cwd: emptyDir() });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: service whoami/);
    const notLoggedIn = await runCli(['whoami'], { cwd: emptyDir(), env: baseEnv() });
    expect(notLoggedIn.code).toBe(1);
    expect(notLoggedIn.stderr).toMatch(/log/i);
  });

  it('reads the global flags anywhere on the line and hands them to the developer CLI', async () => {
    const version = await runInProcess(['--json', '--version'], { cwd: emptyDir() });
    expect(version.code).toBe(0);
    expect(JSON.parse(version.stdout)).toEqual({ version: readJson(join(PACKAGE, 'package.json')).version });
    const help = await runInProcess(['--help', 'sync'], { cwd: emptyDir() });
    expect(help).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Usage: service sync/) });
    for (const args of [
      ['--json', 'whoami'],
      ['whoami', '--json'],
    ]) {
      const whoami = await runCli(args, { cwd: emptyDir() });
      expect(whoami.code, whoami.stderr).toBe(1);
      expect(JSON.parse(whoami.stdout)).toEqual({
        error: { message: expect.stringMatching(/log/i), exitCode: 1 },
      });
    }
    const devHelp = await runCli(['--help', 'whoami'], { cwd: emptyDir() });
    expect(devHelp).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Usage: service whoami/) });
  });

  it.each([
    [['--json', 'sync'], 1, /run `service init` first/],
    [['init', '--yes', '--bogus', '--json'], 1, /unknown option --bogus/],
    [['doctor', '--json', 'a', 'b'], 1, /unexpected argument b/],
    [['refine', '--json'], 1, /run `service init` first/],
    [['mcp', '--json'], 1, /name a subcommand/],
    [['mcp', 'verify-domain', '--json'], 1, /--domain is required/],
    [['cloud', 'login', '--json'], 1, /not available in this version/],
    [['frobnicate', '--json'], 2, /^Unknown command: frobnicate$/],
    [['--json'], 2, /No command given/],
  ])('under --json, answers an error as one JSON object on stdout: %j', async (args, exitCode, message) => {
    // One row through the bin: its stderr stays empty in a real process too (no warning, no trace).
    const runner = (args as string[])[0] === 'frobnicate' ? runCli : runInProcess;
    const result = await runner(args as string[], { cwd: emptyDir() });
    expect(result.code).toBe(exitCode);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual({
      error: { message: expect.stringMatching(message), exitCode },
    });
  });

  it('init --json applies only with --yes and prints { applied, plan }', async () => {
    const dir = emptyDir();
    writeJson(join(dir, 'package.json'), { name: 'shop', dependencies: { express: '^5.0.0' } });
    const refused = await runInProcess(['init', '--json'], { cwd: dir });
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).error.message).toMatch(/pass --yes/);
    expect(readdirSync(dir)).toEqual(['package.json']);
    const applied = await runInProcess(['init', '--json', '--yes'], { cwd: dir });
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout)).toMatchObject({
      applied: true,
      plan: { framework: 'express', env: { action: 'provision' } },
    });
    expect(readJson(join(dir, '.service/config.json')).framework).toBe('express');
  });

  it.each([
    [[], '  service init --yes\n'],
    ...['init', 'sync', 'doctor', 'refine', 'mcp', 'cloud'].map((command) => [
      [command],
      `  service ${command}`,
    ]),
  ])('ends the help of %j with examples', async (command, example) => {
    const help = await runInProcess([...(command as string[]), '--help'], { cwd: emptyDir() });
    expect(help.code).toBe(0);
    const examples = help.stdout.split(/\nExamples?:\n/)[1];
    expect(examples, help.stdout).toBeDefined();
    expect(examples).toContain(example);
    for (const line of examples!.trimEnd().split('\n')) expect(line).toMatch(/^ {2}(\S+=\S+ )?service /);
  });

  /** Runs the CLI in an empty folder with its reader gone before it writes: its writes meet EPIPE. */
  const withClosedPipe = async (args: string[]) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: emptyDir(),
      env: baseEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const [code] = await once(child, 'exit');
    return { code, stderr };
  };

  it('stops quietly when the reader closes the pipe early (`service sync --json | head -c 10`)', async () => {
    expect((await withClosedPipe(['sync', '--json'])).stderr).toBe('');
  });

  it("keeps the command's own exit code when the reader has closed the pipe (`service doctor | head -1`)", async () => {
    // doctor finds a problem in an empty folder (no .service/config.json): exit 1, pipe or not.
    expect(await withClosedPipe(['doctor'])).toEqual({ code: 1, stderr: '' });
  });

  it('says the current folder is gone when it was removed, never with a stack trace; --version still answers', async () => {
    /** The bin run from a folder removed just before it starts (a shell left in it). */
    const inRemovedFolder = async (args: string[]) => {
      const dir = emptyDir();
      const child = spawn(
        'sh',
        ['-c', 'cd "$1" && rmdir "$1" && shift && exec "$@"', 'sh', dir, process.execPath, BIN, ...args],
        { env: baseEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const [code] = await once(child, 'exit');
      return { code, stdout, stderr };
    };
    expect((await inRemovedFolder(['--version'])).code).toBe(0);
    const gone =
      'The current folder no longer exists (removed or moved away): cd to a folder and run the command again.';
    for (const command of ['sync', 'doctor']) {
      const answer = await inRemovedFolder([command]);
      expect(answer.code, command).toBe(1);
      expect(answer.stderr, command).toContain(gone);
      expect(answer.stderr, command).not.toMatch(/\n\s+at /);
    }
    const json = await inRemovedFolder(['sync', '--json']);
    expect(JSON.parse(json.stdout)).toEqual({ error: { message: gone, exitCode: 1 } });
  });

  it('passes a signal sent to it alone on to a developer command, which stops with it', async () => {
    const platform = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve));
    const marker = `signal-${process.pid}-${Date.now()}`;
    const apiBase = `http://127.0.0.1:${(platform.address() as AddressInfo).port}/${marker}`;
    try {
      const child = spawn(process.execPath, [BIN, 'login', '--api-base', apiBase, '--no-browser'], {
        cwd: emptyDir(),
        env: baseEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      // Waiting for the browser: the developer CLI runs under it, listening.
      const deadline = Date.now() + 15_000;
      while (!/http:\/\/127\.0\.0\.1/.test(output) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      const running = () =>
        promisify(execFile)('pgrep', ['-f', marker]).then(
          ({ stdout }) =>
            stdout
              .trim()
              .split('\n')
              .map(Number)
              .filter((pid) => pid !== child.pid),
          () => [],
        );
      expect(await running()).not.toEqual([]);
      child.kill('SIGTERM');
      const [code, signal] = await once(child, 'exit');
      expect({ code, signal }).toEqual({ code: 143, signal: null });
      expect(await running()).toEqual([]);
    } finally {
      platform.closeAllConnections();
      platform.close();
    }
  });

  it('is what `pnpm exec service` runs at the repo root', async () => {
    const { stdout } = await promisify(execFile)('pnpm', ['exec', 'service', '--help'], {
      cwd: ROOT,
      env: { ...process.env, npm_config_loglevel: 'error' },
    });
    expect(stdout).toContain('Framework commands:');
  });
});
