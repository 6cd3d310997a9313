/**
 * A new Next.js 15 app (webpack, `middleware.ts`), as a host developer has one: our packages
 * packed with `pnpm pack` and installed from their tarballs beside Next.js 15 from the registry
 * (or pnpm's store), outside the workspace, so they sit in the app's `node_modules` as a real
 * install puts them (`serverExternalPackages` keeps only such packages out of the bundle). Then
 * the same walk as on Next.js 16: `service init --yes` through `sync` and `next dev` to a green
 * `service doctor`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../examples/platform/test/support/boot.js';
import type { AppProcess } from './support/app-process.js';
import { BUILT, ROOT, readJson, writeJson } from './support/cli.js';
import { walkNextApp, writeNextAppSources } from './support/next-app.js';

const NEXT_15 = '15.5.29';
let root: string;
let dir: string;
let app: AppProcess | undefined;

const pnpm = (args: string[], cwd: string) =>
  execFileSync('pnpm', args, { cwd, encoding: 'utf8', stdio: 'pipe', timeout: 300_000 });

describe.skipIf(!BUILT)('service on a new Next.js 15 app, installed from tarballs', () => {
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'svc-next15-'));
    const packs = join(root, 'packs');
    mkdirSync(packs);
    const tarball: Record<string, string> = {};
    for (const name of ['core', 'dashboard', 'next', 'framework-cli', 'dev-cli']) {
      pnpm(['pack', '--pack-destination', packs], join(ROOT, 'packages', name));
      const file = readdirSync(packs).find((entry) => entry.startsWith(`service-${name}-`));
      if (!file) throw new Error(`pnpm pack made no tarball for @service/${name}`);
      tarball[`@service/${name}`] = `file:${join(packs, file)}`;
    }
    // The versions the workspace itself installs, so pnpm's store has them.
    const versionOf = (folder: string, name: string) => {
      const pkg = readJson<Record<string, Record<string, string> | undefined>>(
        join(ROOT, folder, 'package.json'),
      );
      return pkg.dependencies?.[name] ?? pkg.devDependencies![name]!;
    };
    dir = join(root, 'next15-shop');
    mkdirSync(dir);
    writeJson(join(dir, 'package.json'), {
      name: 'next15-shop',
      version: '0.1.0',
      private: true,
      scripts: { dev: 'next dev' },
      dependencies: {
        next: NEXT_15,
        react: versionOf('examples/next-host', 'react'),
        'react-dom': versionOf('examples/next-host', 'react-dom'),
        ai: versionOf('packages/core', 'ai'),
        '@service/core': tarball['@service/core'],
        '@service/next': tarball['@service/next'],
      },
      devDependencies: {
        '@service/framework-cli': tarball['@service/framework-cli'],
        typescript: versionOf('.', 'typescript'),
        '@types/react': versionOf('examples/next-host', '@types/react'),
        // Next.js 15 refuses to start a TypeScript app without it (create-next-app lists it).
        '@types/node': versionOf('.', '@types/node'),
      },
      // Our packages' dependencies on each other from the tarballs too, not the registry.
      pnpm: { overrides: tarball },
    });
    writeNextAppSources(dir);
    pnpm(['install', '--prefer-offline'], dir);
  }, 600_000);
  afterAll(async () => {
    await app?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('init --yes writes middleware.ts and the webpack externals, and the walk ends green', {
    timeout: 300_000,
  }, async () => {
    await walkNextApp(dir, 'middleware', await freePort(), (started) => {
      app = started;
    });
    expect(readFileSync(join(dir, 'next.config.mjs'), 'utf8')).toContain(
      "serverExternalPackages: ['@service/core', '@electric-sql/pglite']",
    );
  });
});
