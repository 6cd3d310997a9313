/**
 * `service sync` exit codes against a running host with a real grant: 0 (warnings included),
 * 2 for breaking changes under --strict, 3 when a breaking change touches a saved reference (here
 * a remembered approval, a grant) under --strict. Exit 2 for a `<Remixable>` sync cannot capture
 * is in remixables.test.ts.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@service/core/http';
import type { Store } from '@service/core/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningHost, startExpressHost } from '../../../examples/express-host/src/host.js';
import { openMemoryStore } from '../../core/test/support/stores.js';
import { BUILT, baseEnv, readJson, runCli, runInProcess, writeJson } from './support/cli.js';

let store: Store;
let host: RunningHost;
let dir: string;

const tool = (name: string, extra = '') =>
  `{ name: '${name}', description: '${name} does its job.', input: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] }, execute: () => null${extra} }`;

/** The app's tools module: plain tool objects, as `defineTool` returns them. */
function writeTools(...tools: string[]): void {
  writeFileSync(join(dir, 'tools.ts'), `export const tools = [\n  ${tools.join(',\n  ')},\n];\n`);
}

async function grantCancelOrder(): Promise<void> {
  const login = await fetch(`${host.url}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'dana@example.com' }),
  });
  const { token } = (await login.json()) as { token: string };
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const turn = await fetch(`${host.url}/api/service/chat`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ id: 'dana-cancel', message: 'cancel order A-1001' }),
  });
  await turn.text();
  const { approvals } = (await (
    await fetch(`${host.url}/api/service/approvals?status=pending`, { headers: auth })
  ).json()) as { approvals: Array<{ id: string }> };
  const decided = await fetch(`${host.url}/api/service/approvals/${approvals[0]!.id}/decide`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ decision: 'approve', remember: true }),
  });
  expect(decided.status).toBe(200);
}

const sync = (...args: string[]) => runCli(['sync', ...args], { cwd: dir });
const catalogNames = () =>
  readJson<{ tools: Array<{ name: string }> }>(join(dir, '.service/catalog.json')).tools.map((t) => t.name);

describe.skipIf(!BUILT)('service sync exit codes', () => {
  beforeAll(async () => {
    store = await openMemoryStore();
    host = await startExpressHost({ store, development: true, logger: silentLogger, env: {} });
    await grantCancelOrder();
    dir = mkdtempSync(join(tmpdir(), 'svc-fcli-sync-'));
    writeJson(join(dir, 'package.json'), { name: 'shop', private: true, type: 'module' });
    writeJson(join(dir, '.service/config.json'), {
      version: 1,
      framework: 'express',
      toolsModule: 'tools.ts',
      modelImport: './ai',
      wiring: [],
    });
  });
  afterAll(async () => {
    await host?.close();
    await store?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('exits 0 on a first catalog and on additive changes, even under --strict', async () => {
    writeTools(tool('list_orders'), tool('cancel_order', ", risk: 'destructive'"));
    expect((await sync()).code).toBe(0);
    expect(catalogNames()).toEqual(['list_orders', 'cancel_order']);
    writeTools(tool('list_orders'), tool('cancel_order', ", risk: 'destructive'"), tool('add_note'));
    const result = await sync('--strict', '--json');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).report.changes).toEqual([
      { tool: 'add_note', kind: 'added', breaking: false, details: ['added'] },
    ]);
  });

  it('exits 2 under --strict on a breaking change no saved reference uses, and keeps the catalog', async () => {
    writeTools(tool('cancel_order', ", risk: 'destructive'"), tool('add_note'));
    const result = await sync('--strict', '--json', '--url', host.url);
    expect(result.code).toBe(2);
    const body = JSON.parse(result.stdout);
    expect(body).toMatchObject({
      ok: false,
      exitCode: 2,
      report: { breaking: ['list_orders'], written: false },
      impact: { tools: [{ name: 'list_orders', apps: 0, automations: 0, grants: 0 }] },
    });
    expect(Object.keys(body).sort()).toEqual(['exitCode', 'impact', 'notes', 'ok', 'report']);
    // The zeros of apps and automations are not counts: sync says what impact covers.
    expect(body.notes).toContainEqual(
      expect.stringMatching(/^Impact counts grants and saved apps; not automations/),
    );
    expect(catalogNames()).toContain('list_orders');
  });

  it('exits 0 without --strict on the same change (a warning), and writes the catalog', async () => {
    const result = await sync();
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/breaking list_orders: removed/);
    expect(result.stdout).toMatch(/--strict/);
    expect(catalogNames()).toEqual(['cancel_order', 'add_note']);
  });

  it('exits 3 under --strict when a breaking change touches a saved grant', async () => {
    writeTools(tool('add_note'));
    const result = await runCli(['sync', '--strict', '--json'], {
      cwd: dir,
      env: baseEnv({ SERVICE_URL: host.url }),
    });
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({
      exitCode: 3,
      report: { breaking: ['cancel_order'] },
      impact: { url: host.url, tools: [{ name: 'cancel_order', known: true, grants: 1 }] },
    });
    // SERVICE_URL in the app's .env counts as in the environment (doctor reads it there too).
    writeFileSync(join(dir, '.env'), `SERVICE_URL=${host.url}\n`);
    try {
      const fromDotEnv = await runCli(['sync', '--strict', '--json'], { cwd: dir, env: baseEnv() });
      expect(fromDotEnv.code, fromDotEnv.stdout).toBe(3);
      expect(JSON.parse(fromDotEnv.stdout).impact).toMatchObject({ url: host.url });
    } finally {
      rmSync(join(dir, '.env'));
    }
    // --url wins over SERVICE_URL; without a reachable app the impact is unknown: exit 2, a note.
    const unreachable = await runCli(['sync', '--strict', '--json', '--url', 'http://127.0.0.1:9'], {
      cwd: dir,
      env: baseEnv({ SERVICE_URL: host.url }),
    });
    expect(unreachable.code).toBe(2);
    expect(JSON.parse(unreachable.stdout).notes[0]).toMatch(/^No impact from http:\/\/127\.0\.0\.1:9/);
  });

  it('treats an input property made required as breaking', async () => {
    writeTools(tool('cancel_order', ", risk: 'destructive'"), tool('add_note'));
    expect((await sync()).code).toBe(0);
    writeFileSync(
      join(dir, 'tools.ts'),
      readFileSync(join(dir, 'tools.ts'), 'utf8').replace(
        "add_note does its job.', input: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] }",
        "add_note does its job.', input: { type: 'object', properties: { orderId: { type: 'string' }, note: { type: 'string' } }, required: ['orderId', 'note'] }",
      ),
    );
    const result = await sync('--strict', '--json');
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout).report.changes).toEqual([
      { tool: 'add_note', kind: 'changed', breaking: true, details: ['input.note now required'] },
    ]);
  });

  it('warns, exit 0, on an override naming a tool the catalog lacks (the app skips such names)', async () => {
    writeJson(join(dir, '.service/overrides.json'), {
      surfaces: { mcp: ['add_note', 'gone_tool'] },
      tools: { old_tool: { title: 'Old' } },
    });
    try {
      const result = await sync('--json');
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout).report.staleOverrides).toEqual([
        'surfaces.mcp: gone_tool',
        'tools.old_tool',
      ]);
      const text = await sync();
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/warning {2}override surfaces\.mcp: gone_tool names no tool/);
    } finally {
      rmSync(join(dir, '.service/overrides.json'));
    }
  });

  it('exits 1 on an overrides file the app refuses to start on, naming the problem, and writes nothing', async () => {
    writeTools(tool('add_note'));
    const catalog = readFileSync(join(dir, '.service/catalog.json'), 'utf8');
    const cases: Array<[string, string]> = [
      ['{bad', 'not valid JSON'],
      ['[]', 'file: Invalid input: expected object, received array'],
      ['{"surfaces":{"door":[]}}', 'surfaces: surfaces accepts only agent and mcp'],
      ['{"tools":{"add_note":{"title":""}}}', 'tools.add_note.title: Too small'],
    ];
    try {
      for (const [text, problem] of cases) {
        writeFileSync(join(dir, '.service/overrides.json'), text);
        const result = await sync('--json');
        expect(result.code).toBe(1);
        const { error } = JSON.parse(result.stdout) as { error: { message: string } };
        expect(error.message).toContain(`.service/overrides.json: ${problem}`);
        expect(error.message).toMatch(/the app refuses to start on it; fix or remove it\.$/);
        expect(readFileSync(join(dir, '.service/catalog.json'), 'utf8')).toBe(catalog);
      }
    } finally {
      rmSync(join(dir, '.service/overrides.json'));
    }
  });

  it('exits 1 on a baseline that is not a catalog (a merge conflict), and keeps it', async () => {
    writeTools(tool('add_note'));
    const file = join(dir, '.service/catalog.json');
    const original = readFileSync(file, 'utf8');
    for (const broken of ['{bad', '<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> main\n', '{"version":1}']) {
      writeFileSync(file, broken);
      const result = await sync('--strict');
      expect(result).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(
          /^\.service\/catalog\.json in .* is not a catalog \(a merge conflict\?\)/,
        ),
      });
      expect(readFileSync(file, 'utf8')).toBe(broken);
    }
    writeFileSync(file, original);
  });

  it('exits 1 when the tools are not valid, naming the problem', async () => {
    writeFileSync(
      join(dir, 'tools.ts'),
      "export const tools = [{ name: 'service_x', description: 'x', input: { type: 'object' }, execute() {} }];\n",
    );
    const result = await sync();
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/service_ prefix is reserved/);
    // Under --json, exit 1 is still one JSON object on stdout (the developer CLI's error shape).
    const json = await sync('--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      error: { message: expect.stringMatching(/service_ prefix is reserved/), exitCode: 1 },
    });
  });

  it('ends once its report is written, though the tools module keeps a timer running', async () => {
    writeFileSync(
      join(dir, 'tools.ts'),
      `setInterval(() => {}, 1000);\nexport const tools = [${tool('lookup_order')}];\n`,
    );
    const result = await sync();
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('lookup_order');
  }, 20_000);

  it('keeps stdout one JSON object when the tools module logs as it loads and runs', async () => {
    writeFileSync(
      join(dir, 'tools.ts'),
      `console.log('connecting…');\nconsole.info('connected');\nsetTimeout(() => console.log('later'), 0);\nexport const tools = [${tool('lookup_order')}];\n`,
    );
    const result = await sync('--json');
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, report: { tools: 1 } });
    expect(result.stderr).toContain('connecting…\nconnected\n');
  });

  it('exits 1 when the tools module ends the process as it loads, writing nothing', async () => {
    writeFileSync(
      join(dir, 'tools.ts'),
      `process.exit(0);\nexport const tools = [${tool('lookup_order')}];\n`,
    );
    writeJson(join(dir, '.service/catalog.json'), { version: 1, tools: [] });
    const before = readFileSync(join(dir, '.service/catalog.json'), 'utf8');
    const result = await sync();
    expect(result).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(
        /^Could not load .*tools\.ts: it called process\.exit\(0\) while loading/,
      ),
    });
    expect(readFileSync(join(dir, '.service/catalog.json'), 'utf8')).toBe(before);
  });

  it('names a package the tools module needs that is not installed, and the line that installs it', async () => {
    // As after `service init` in an app whose dependencies are not installed yet.
    writeFileSync(
      join(dir, 'tools.ts'),
      "import { defineTool } from '@service/core/wire';\nexport const tools = [defineTool({ name: 'x', description: 'x.', input: { type: 'object' }, execute: () => null })];\n",
    );
    const npm = await sync();
    expect(npm).toMatchObject({
      code: 1,
      stderr:
        'Could not load tools.ts: it needs the package @service/core, which is not installed in the app: run `npm install @service/core`.\n',
    });
    // The install line is the app's package manager's, by its lockfile.
    writeFileSync(join(dir, 'pnpm-lock.yaml'), "lockfileVersion: '9.0'\n");
    try {
      const pnpm = await sync('--json');
      expect(JSON.parse(pnpm.stdout).error.message).toMatch(/run `pnpm add @service\/core`\.$/);
    } finally {
      rmSync(join(dir, 'pnpm-lock.yaml'));
    }
  });

  it('points a command run in a subfolder of the app at the app', async () => {
    const sub = join(dir, 'src/lib');
    mkdirSync(sub, { recursive: true });
    // Refused before any tools module loads: the bin's `run` in this process answers the same.
    const result = await runInProcess(['sync'], { cwd: sub });
    expect(result).toMatchObject({
      code: 1,
      stderr: `No .service/config.json in ${sub}: the app is ${dir}; run the command there, or pass the folder.\n`,
    });
  });

  it('exits 1 naming the cause when the tools module never finishes loading', async () => {
    writeFileSync(
      join(dir, 'tools.ts'),
      `await new Promise(() => {});\nexport const tools = [${tool('lookup_order')}];\n`,
    );
    const result = await sync();
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/did not finish loading within 10 s/);
  }, 30_000);

  it('resolves the app’s own `@/` paths from its tsconfig, as its bundler does', async () => {
    const app = mkdtempSync(join(tmpdir(), 'svc-fcli-alias-'));
    writeJson(join(app, 'package.json'), { name: 'aliased', private: true });
    writeJson(join(app, 'tsconfig.json'), { compilerOptions: { paths: { '@/*': ['./src/*'] } } });
    writeJson(join(app, '.service/config.json'), {
      version: 1,
      framework: 'next',
      toolsModule: 'src/lib/tools.ts',
      modelImport: '@/lib/ai',
      wiring: [],
    });
    writeJson(join(app, 'src/lib/words.json'), { description: 'Described elsewhere.' });
    writeFileSync(
      join(app, 'src/lib/tools.ts'),
      "import words from '@/lib/words.json';\nexport const tools = [{ name: 'x', description: words.description, input: { type: 'object' }, execute() {} }];\n",
    );
    const result = await runCli(['sync'], { cwd: app });
    expect(result.code, result.stderr).toBe(0);
    expect(
      readJson<{ tools: Array<{ description: string }> }>(join(app, '.service/catalog.json')).tools[0]
        ?.description,
    ).toBe('Described elsewhere.');
  });

  it('answers --report with the documented errors until the cloud exists, before any action', async () => {
    // Answered before any tools module loads: in this process, as the bin's `run` answers it.
    const empty = mkdtempSync(join(tmpdir(), 'svc-fcli-report-'));
    const noKey = await runInProcess(['sync', '--report'], { cwd: empty });
    expect(noKey).toMatchObject({ code: 1, stderr: expect.stringMatching(/needs the cloud key/) });
    const badKey = await runInProcess(['sync', '--report', '--key', 'svc_123'], { cwd: empty });
    expect(badKey.stderr).toMatch(/svc_ followed by 40 hex/);
    const good = await runInProcess(['sync', '--report'], {
      cwd: empty,
      env: baseEnv({ SERVICE_API_KEY: `svc_${'a1'.repeat(20)}` }),
    });
    expect(good).toMatchObject({ code: 1, stderr: expect.stringMatching(/not available in this version/) });
  });
});
