/**
 * A new Express app in a temp folder, taken through the whole path a developer takes:
 * `service init --agent` (writes nothing), `init --yes`, `sync`, the app started, `doctor`
 * green against it (and red once it stops), `refine` with the offline demo model; and what
 * init never does: overwrite host source or regenerate the store key.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../examples/platform/test/support/boot.js';
import { type AppProcess, startApp } from './support/app-process.js';
import { BUILT, baseEnv, createApp, installed, readJson, runCli } from './support/cli.js';

const APP_SOURCE = `import express from 'express';
import { mountServiceRoutes } from './service.js';

const app = express();
mountServiceRoutes(app);
app.get('/', (_req, res) => {
  res.send('shop');
});
app.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
`;

/** Every file under dir (node_modules aside), with its content. */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(join(dir, at))) {
      if (name === 'node_modules') continue;
      const path = at ? `${at}/${name}` : name;
      if (statSync(join(dir, path)).isDirectory()) walk(path);
      else files[path] = readFileSync(join(dir, path), 'utf8');
    }
  };
  walk('');
  return files;
}

let dir: string;
let app: AppProcess | undefined;

describe.skipIf(!BUILT)('service on a new Express app', () => {
  beforeAll(() => {
    dir = createApp(
      {
        name: '@acme/shop',
        version: '1.0.0',
        private: true,
        type: 'module',
        dependencies: { '@service/core': '*', '@service/express': '*', express: '^5.3.0' },
      },
      {
        express: installed('examples/express-host', 'express'),
        tsx: installed('examples/express-host', 'tsx'),
      },
    );
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('init --agent prints the plan as JSON and writes nothing', async () => {
    const before = snapshot(dir);
    const result = await runCli(['init', '--agent'], { cwd: dir });
    expect(result.code).toBe(0);
    const plan = JSON.parse(result.stdout);
    expect(plan).toMatchObject({
      framework: 'express',
      modelImport: './ai.js',
      env: { variable: 'SERVICE_STORE_ENCRYPTION_KEY', action: 'provision' },
      scripts: [
        { name: 'predev', command: 'service sync', action: 'add' },
        { name: 'prebuild', command: 'service sync --strict', action: 'add' },
      ],
    });
    expect(plan.files.map((f: { path: string }) => f.path)).toEqual([
      'service.ts',
      'service-tools.ts',
      'ai.ts',
      '.service/config.json',
      '.service/.gitignore',
    ]);
    expect(snapshot(dir)).toEqual(before);
  });

  it('is what `npx service` runs in the app', async () => {
    const { stdout } = await promisify(execFile)('npx', ['--no', 'service', '--', '--help'], {
      cwd: dir,
      env: { ...baseEnv(), npm_config_loglevel: 'error' },
    });
    expect(stdout).toContain('Framework commands:');
  });

  it('init without --yes and without a terminal writes nothing and exits 1', async () => {
    const before = snapshot(dir);
    const result = await runCli(['init'], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/pass --yes/);
    expect(snapshot(dir)).toEqual(before);
  });

  it('init --yes writes the wiring, the owned files, the key and the scripts', async () => {
    const result = await runCli(['init', '--yes', '--brief', 'You help with orders.'], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(dir, 'service.ts'), 'utf8')).toContain('mountService(app, service)');
    expect(readFileSync(join(dir, 'service.ts'), 'utf8')).toContain('"You help with orders."');
    expect(readJson(join(dir, '.service/config.json'))).toMatchObject({
      framework: 'express',
      toolsModule: 'service-tools.ts',
      modelImport: './ai.js',
    });
    const key = /^SERVICE_STORE_ENCRYPTION_KEY=(.+)$/m.exec(readFileSync(join(dir, '.env'), 'utf8'))?.[1];
    expect(Buffer.from(key!, 'base64')).toHaveLength(32);
    expect(readJson(join(dir, 'package.json')).scripts).toEqual({
      predev: 'service sync',
      prebuild: 'service sync --strict',
    });
  });

  it('init --force regenerates .service/ files, never host source, and never the key', async () => {
    const env = readFileSync(join(dir, '.env'), 'utf8');
    writeFileSync(
      join(dir, 'service-tools.ts'),
      `${readFileSync(join(dir, 'service-tools.ts'), 'utf8')}// mine\n`,
    );
    writeFileSync(join(dir, '.service/config.json'), '{"version":1,"broken":true}\n');
    const result = await runCli(['init', '--yes', '--force'], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(dir, 'service-tools.ts'), 'utf8')).toMatch(/\/\/ mine\n$/);
    expect(readJson(join(dir, '.service/config.json'))).toMatchObject({ framework: 'express' });
    expect(readFileSync(join(dir, '.env'), 'utf8')).toBe(env);
  });

  it('sync extracts the tools into .service/catalog.json', async () => {
    const result = await runCli(['sync', '--json'], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, exitCode: 0, impact: null, notes: [] });
    expect(readJson(join(dir, '.service/catalog.json'))).toEqual({
      version: 1,
      tools: [
        {
          name: 'say_hello',
          title: 'Say hello',
          description: 'Greets the signed-in user.',
          risk: 'read',
          audience: 'end-user',
          enabled: true,
          inputSchema: { type: 'object', properties: {}, additionalProperties: false },
        },
      ],
    });
  });

  it('doctor is green against the running app, and exits 1 once it stops', { timeout: 120_000 }, async () => {
    writeFileSync(join(dir, 'app.ts'), APP_SOURCE);
    const port = await freePort();
    app = await startApp([process.execPath, '--env-file=.env', '--import', 'tsx', 'app.ts'], {
      cwd: dir,
      port,
      ready: /listening/,
    });
    // The store opens after the port: wait for the wire before doctor's own round trip.
    const status = await fetch(`${app.url}/api/service/status`, { signal: AbortSignal.timeout(60_000) });
    expect(status.status, app.output()).toBe(200);
    const env = baseEnv({ SERVICE_URL: app.url });
    const green = await runCli(['doctor'], { cwd: dir, env });
    expect(green.code, green.stdout).toBe(0);
    expect(green.stdout).toContain('✓ http://127.0.0.1');
    expect(green.stdout).toContain('! actAs is not configured');
    expect(green.stdout).toMatch(/service doctor: green/);

    await app.stop();
    app = undefined;
    const red = await runCli(['doctor'], { cwd: dir, env });
    expect(red.code).toBe(1);
    expect(red.stdout).toMatch(/no answer .* is the app running\?/);
  });

  it('doctor exits 1 when the wiring is broken', async () => {
    const key = readFileSync(join(dir, '.env'), 'utf8');
    writeFileSync(join(dir, '.env'), 'SERVICE_STORE_ENCRYPTION_KEY=short\n');
    try {
      const result = await runCli(['doctor'], {
        cwd: dir,
        env: baseEnv({ SERVICE_URL: 'http://127.0.0.1:9' }),
      });
      expect(result.code).toBe(1);
      expect(result.stdout).toContain(
        "✗ SERVICE_STORE_ENCRYPTION_KEY is not base64 of 32 bytes (several may be comma-separated): make one with `node -e \"console.log(require('crypto').randomBytes(32).toString('base64'))\"`",
      );
      // init says the same of it, and keeps it.
      const again = await runCli(['init', '--yes'], { cwd: dir, env: baseEnv({}) });
      expect(again.stdout).toContain(
        'SERVICE_STORE_ENCRYPTION_KEY in .env is not base64 of 32 bytes (several may be comma-separated); it is kept as it is: make one with',
      );
      expect(readFileSync(join(dir, '.env'), 'utf8')).toBe('SERVICE_STORE_ENCRYPTION_KEY=short\n');
    } finally {
      writeFileSync(join(dir, '.env'), key);
    }
  });

  it('doctor takes comma-separated keys, as the store rotates them', async () => {
    const keys = [1, 2].map((n) => Buffer.alloc(32, n).toString('base64'));
    const check = async (value: string) =>
      (
        await runCli(['doctor'], {
          cwd: dir,
          env: baseEnv({ SERVICE_URL: 'http://127.0.0.1:9', SERVICE_STORE_ENCRYPTION_KEY: value }),
        })
      ).stdout;
    expect(await check(keys.join(','))).toContain('✓ SERVICE_STORE_ENCRYPTION_KEY is set');
    expect(await check(`${keys[0]}, ${keys[1]}`)).toContain('✓ SERVICE_STORE_ENCRYPTION_KEY is set');
    expect(await check(`${keys[0]},short`)).toContain('✗ SERVICE_STORE_ENCRYPTION_KEY is not base64');
    expect(await check(' , ')).toContain('✗ SERVICE_STORE_ENCRYPTION_KEY is not base64');
  });

  it('doctor run in a subfolder reads the app folder’s .env', async () => {
    const sub = join(dir, 'src/lib');
    mkdirSync(sub, { recursive: true });
    const result = await runCli(['doctor'], {
      cwd: sub,
      env: baseEnv({ SERVICE_URL: 'http://127.0.0.1:9' }),
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`✗ No .service/config.json in ${sub}: the app is ${dir};`);
    expect(result.stdout).toContain('✓ SERVICE_STORE_ENCRYPTION_KEY is set');
  });

  it('doctor reports E-MCP-009 when the wiring opens the door without a canonical URL', async () => {
    const file = join(dir, 'service.ts');
    const wiring = readFileSync(file, 'utf8');
    writeFileSync(file, wiring.replace('  tools,\n', '  tools,\n  mcp: true,\n'));
    try {
      const offline = baseEnv({ SERVICE_URL: 'http://127.0.0.1:9' });
      const missing = await runCli(['doctor'], { cwd: dir, env: offline });
      expect(missing.code).toBe(1);
      expect(missing.stdout).toContain('✗ E-MCP-009');
      const set = await runCli(['doctor'], {
        cwd: dir,
        env: { ...offline, SERVICE_BASE_URL: 'https://shop.example.com' },
      });
      expect(set.stdout).not.toContain('E-MCP-009');
      // Commented out, neither opens the door nor names its URL.
      writeFileSync(
        file,
        wiring.replace('  tools,\n', '  tools,\n  // mcp: true,\n  /* mcp: { serverName: "x" } */\n'),
      );
      expect((await runCli(['doctor'], { cwd: dir, env: offline })).stdout).not.toContain('E-MCP-009');
      writeFileSync(
        file,
        wiring.replace('  tools,\n', "  tools,\n  mcp: true,\n  // baseUrl: 'https://shop.example.com',\n"),
      );
      expect((await runCli(['doctor'], { cwd: dir, env: offline })).stdout).toContain('✗ E-MCP-009');
    } finally {
      writeFileSync(file, wiring);
    }
  });

  it('refine proposes a diff with the offline demo model, applies it only on --yes, keeps a transcript', async () => {
    const proposed = await runCli(['refine', '--ask', 'hide say_hello from outside agents'], { cwd: dir });
    expect(proposed.code, proposed.stderr).toBe(0);
    expect(proposed.stdout).toContain('--- a/.service/overrides.json');
    expect(proposed.stdout).toContain('+  "surfaces": {');
    expect(proposed.stdout).toContain('offline demo model');
    expect(proposed.stdout).toContain('Not applied: pass --yes');
    expect(() => readFileSync(join(dir, '.service/overrides.json'))).toThrow();
    const json = await runCli(['refine', '--json', '--ask', 'hide say_hello'], { cwd: dir });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      model: 'demo/refine-offline',
      diff: expect.stringContaining('--- a/.service/overrides.json'),
      applied: false,
      transcript: expect.stringMatching(/^\.service\/data\/refine\/.+\.json$/),
    });
    expect(() => readFileSync(join(dir, '.service/overrides.json'))).toThrow();

    const applied = await runCli(['refine', '--yes', '--ask', 'hide say_hello'], { cwd: dir });
    expect(applied.code).toBe(0);
    expect(readJson(join(dir, '.service/overrides.json'))).toEqual({ surfaces: { mcp: [] } });
    const transcripts = readdirSync(join(dir, '.service/data/refine'));
    expect(transcripts).toHaveLength(3);
    const last = readJson(join(dir, '.service/data/refine', transcripts.sort().at(-1)!));
    expect(last).toMatchObject({ model: 'demo/refine-offline', asks: ['hide say_hello'], applied: true });

    const again = await runCli(['refine', '--yes', '--ask', 'hide say_hello'], { cwd: dir });
    expect(again.stdout).toContain('Nothing to change.');
  });

  it('refine answers with a model module that is a package of the app, and refuses one that is not there', async () => {
    // An ES-only package, as model packages often are: only its `import` entry loads.
    const pkgDir = join(dir, 'node_modules/my-models');
    mkdirSync(pkgDir, { recursive: true });
    writeFileSync(
      join(pkgDir, 'package.json'),
      JSON.stringify({ name: 'my-models', type: 'module', exports: { '.': { import: './index.js' } } }),
    );
    const answer = { overrides: { tools: { say_hello: { title: 'Greet' } } }, notes: ['from my-models'] };
    writeFileSync(
      join(pkgDir, 'index.js'),
      `export const model = {
  specificationVersion: 'v3', provider: 'acme', modelId: 'fixed', supportedUrls: {},
  doGenerate: async () => ({
    content: [{ type: 'text', text: ${JSON.stringify(JSON.stringify(answer))} }],
    finishReason: { unified: 'stop', raw: undefined },
    usage: { inputTokens: { total: 0, noCache: 0 }, outputTokens: { total: 0, text: 0 } },
    warnings: [],
  }),
};
`,
    );
    const configFile = join(dir, '.service/config.json');
    const config = readFileSync(configFile, 'utf8');
    try {
      const flagged = await runCli(['refine', '--json', '--model-import', 'my-models'], { cwd: dir });
      expect(flagged.code, flagged.stderr).toBe(0);
      expect(JSON.parse(flagged.stdout)).toMatchObject({ model: 'acme/fixed', notes: ['from my-models'] });

      writeFileSync(configFile, config.replace('"./ai.js"', '"my-models"'));
      const configured = await runCli(['refine', '--json'], { cwd: dir });
      expect(configured.code, configured.stderr).toBe(0);
      expect(JSON.parse(configured.stdout)).toMatchObject({ model: 'acme/fixed', notes: ['from my-models'] });

      // A model module that is not there is an error, not the demo model answering in its place.
      for (const [specifier, message] of [
        [
          'no-such-models',
          "no-such-models (modelImport in .service/config.json): no such package in the app's node_modules",
        ],
        [
          './does-not-exist',
          './does-not-exist (modelImport in .service/config.json): no such module in the app.',
        ],
      ]) {
        writeFileSync(configFile, config.replace('"./ai.js"', JSON.stringify(specifier)));
        const missing = await runCli(['refine', '--json'], { cwd: dir });
        expect(missing.code).toBe(1);
        expect(JSON.parse(missing.stdout).error.message).toContain(message);
      }
      const flaggedMissing = await runCli(['refine', '--model-import', 'no-such-models'], { cwd: dir });
      expect(flaggedMissing).toMatchObject({
        code: 1,
        stderr: expect.stringContaining(
          "--model-import no-such-models: no such package in the app's node_modules",
        ),
      });
    } finally {
      writeFileSync(configFile, config);
    }
  });
});
