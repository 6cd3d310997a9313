/**
 * `pnpm start` runs this host beside the platform: boot it as `pnpm start` does, then run the
 * curl lines of docs/wire.md ("Drive a turn with curl") exactly as written.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = join(ROOT, 'examples/platform/src/main.ts');
const TSX_LOADER = (() => {
  const manifest = createRequire(join(ROOT, 'package.json')).resolve('tsx/package.json');
  const { exports } = JSON.parse(readFileSync(manifest, 'utf8')) as { exports: { '.': string } };
  return pathToFileURL(join(dirname(manifest), exports['.'])).href;
})();

let cwd: string;
let child: ChildProcess;
let output = '';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'svc-demo-host-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(await freePort()),
    SERVICE_DEMO_HOST_PORT: String(await freePort()),
    TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json'),
  };
  for (const name of ['DATABASE_URL', 'SERVICE_BASE_URL', 'SERVICE_IDP_URL', 'NODE_ENV']) delete env[name];
  child = spawn(process.execPath, ['--import', TSX_LOADER, MAIN], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const deadline = Date.now() + 60_000;
  while (!output.includes('Platform ready')) {
    if (child.exitCode !== null) throw new Error(`platform exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`platform did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});
afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
  rmSync(cwd, { recursive: true, force: true });
});

/** The shell block after `<!-- name -->` in docs/wire.md. */
function docBlock(name: string): string {
  const doc = readFileSync(join(ROOT, 'docs/wire.md'), 'utf8');
  const match = new RegExp(`<!-- ${name} -->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(doc);
  if (!match) throw new Error(`docs/wire.md has no block ${name}`);
  return match[1]!;
}

describe('pnpm start demo host', () => {
  it('records the host and its sign-in in .service/demo.json', () => {
    const demo = JSON.parse(readFileSync(join(cwd, '.service/demo.json'), 'utf8'));
    expect(demo.host).toMatchObject({
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      wire: expect.stringMatching(/\/api\/service$/),
      signIn: { method: 'POST', body: { email: 'demo@example.com' } },
    });
  });

  it('drives a turn with the curl lines of docs/wire.md', () => {
    const out = execFileSync('bash', ['-euo', 'pipefail', '-c', docBlock('demo-turn')], {
      cwd,
      encoding: 'utf8',
    });
    expect(out).toContain('"type":"tool-output-available"');
    expect(out).toContain('A-1001');
    expect(out.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});
