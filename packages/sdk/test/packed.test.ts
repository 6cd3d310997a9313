/**
 * The SDK and the developer CLI used without a registry, as `docs/packages.md` says: each packed
 * with `pnpm pack`, added to a host app outside the workspace from its tarball (our packages from
 * their tarballs alone; their third-party dependencies from pnpm's store, or the npm registry
 * when this machine's pnpm has not seen their metadata), then used there — the SDK through `require` and `import`
 * against a running platform, the CLI through `pnpm exec service`.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTenantFixture,
  type RunningPlatform,
  startPlatform,
} from '../../core/test/support/platform.js';
import { openTestStore, type TestStore } from '../../core/test/support/stores.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let dir: string;
let app: string;
let store: TestStore;
let running: RunningPlatform;

const pnpm = (args: string[], cwd: string) =>
  execFileSync('pnpm', args, { cwd, encoding: 'utf8', stdio: 'pipe', timeout: 120_000 });

/** Packs a workspace package (built first when its `dist/` is missing) into `dir`; the tarball's path. */
function pack(name: string, folder: string): string {
  if (!existsSync(join(ROOT, folder, 'dist'))) pnpm(['--filter', name, 'build'], ROOT);
  pnpm(['pack', '--pack-destination', dir], join(ROOT, folder));
  const tarball = readdirSync(dir).find((file) => file.startsWith(name.replace('@', '').replace('/', '-')));
  if (!tarball) throw new Error(`pnpm pack made no tarball for ${name}`);
  return join(dir, tarball);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'service-packed-'));
  app = join(dir, 'host-app');
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'host-app', version: '1.0.0', private: true }),
  );
  const sdk = pack('@service/sdk', 'packages/sdk');
  const cli = pack('@service/dev-cli', 'packages/dev-cli');
  pnpm(['add', sdk, '--prefer-offline'], app);
  pnpm(['add', '-D', cli, '--prefer-offline'], app);
  store = await openTestStore();
  running = await startPlatform(store);
}, 240_000);
afterAll(async () => {
  await running?.close();
  await store?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('the packages from their tarballs, in a host app', () => {
  it('reads the balance through the SDK with require and with import', async () => {
    const tenant = await createTenantFixture(running.platform, 3_000_000);
    const env = { ...process.env, SERVICE_API_KEY: tenant.appKey, SERVICE_BASE_URL: running.url };
    // Asynchronously: the platform answering the child runs in this process.
    const read = async (code: string, ...flags: string[]) =>
      JSON.parse(
        (await promisify(execFile)(process.execPath, [...flags, '-e', code], { cwd: app, env })).stdout,
      );
    const body = 'createClient().balance().then((b) => console.log(JSON.stringify(b)))';
    expect(await read(`const { createClient } = require('@service/sdk'); ${body}`)).toMatchObject({
      credits_remaining_micros: 3_000_000,
      currency: 'USD',
    });
    expect(
      await read(`import('@service/sdk').then(({ createClient }) => ${body})`, '--input-type=module'),
    ).toMatchObject({ credits_remaining_micros: 3_000_000 });
  });

  it('runs the developer CLI with pnpm exec service', () => {
    const version = pnpm(['exec', 'service', '--version'], app).trim();
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(pnpm(['exec', 'service', '--help'], app)).toContain('login');
  });
});
