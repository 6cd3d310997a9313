/**
 * What a browser or edge app downloads, and how Node loads the built package: the SDK bundled with
 * everything it imports, minified, stays under 15 KB gzip; the build answers both `import` and
 * `require`. Runs `tsup` first, so it measures the current sources.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const LIMIT_BYTES = 15 * 1024;

describe('the built package', () => {
  beforeAll(() => {
    execFileSync('npx', ['tsup'], { cwd: root, stdio: 'ignore' });
  }, 120_000);

  it('is under 15 KB gzip for a browser, with every dependency bundled and minified', async () => {
    const result = await build({
      entryPoints: [`${root}/dist/index.js`],
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

  it('loads with require and with import, exposing the same client', async () => {
    const required = createRequire(`${root}/package.json`)('@service/sdk');
    const imported = await import('@service/sdk');
    expect(typeof required.createClient).toBe('function');
    expect(typeof imported.createClient).toBe('function');
    expect(Object.keys(required).sort()).toEqual(Object.keys(imported).sort());
    const error = required.createClient({ apiKey: 'service_sk_x', baseUrl: 'http://127.0.0.1:9' });
    expect(typeof error.balance).toBe('function');
  });
});
