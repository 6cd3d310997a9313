/**
 * What a browser or edge app downloads, and how Node loads the built package: the SDK bundled with
 * everything it imports, minified, stays under 15 KB gzip; the package answers both `import` and
 * `require` through its `exports`. Builds into a folder of its own (never over `dist/`, which
 * other suites may be running), laid out as an installed package.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const LIMIT_BYTES = 15 * 1024;
let installed: string;

describe('the built package', () => {
  beforeAll(() => {
    installed = mkdtempSync(join(tmpdir(), 'service-sdk-'));
    execFileSync('npx', ['tsup', '--out-dir', join(installed, 'dist')], { cwd: root, stdio: 'ignore' });
    copyFileSync(join(root, 'package.json'), join(installed, 'package.json'));
    mkdirSync(join(installed, 'node_modules'));
    symlinkSync(
      join(root, 'node_modules/eventsource-parser'),
      join(installed, 'node_modules/eventsource-parser'),
    );
  }, 120_000);
  afterAll(() => rmSync(installed, { recursive: true, force: true }));

  it('is under 15 KB gzip for a browser, with every dependency bundled and minified', async () => {
    const result = await build({
      entryPoints: [join(installed, 'dist/index.js')],
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'browser',
      write: false,
      logLevel: 'silent',
    });
    const bundle = result.outputFiles[0]!.contents;
    const gzipped = gzipSync(bundle).byteLength;
    console.info(`browser bundle: ${bundle.byteLength} bytes, ${gzipped} bytes gzip`);
    expect(gzipped).toBeLessThan(LIMIT_BYTES);
    expect(new TextDecoder().decode(bundle)).not.toMatch(/\bZodError\b/);
  });

  it('loads with require and with import, exposing the same client', () => {
    // The package resolving its own name goes through `exports`, as an installed one does.
    const exportsOf = (code: string, ...flags: string[]) =>
      execFileSync(process.execPath, [...flags, '-e', code], { cwd: installed, encoding: 'utf8' }).trim();
    const required = exportsOf(
      "const sdk = require('@service/sdk'); console.log(typeof sdk.createClient, Object.keys(sdk).sort().join())",
    );
    const imported = exportsOf(
      "import('@service/sdk').then((sdk) => console.log(typeof sdk.createClient, Object.keys(sdk).sort().join()))",
      '--input-type=module',
    );
    expect(required).toMatch(/^function .*createClient/);
    expect(imported).toBe(required);
  });
});
