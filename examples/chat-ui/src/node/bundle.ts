/**
 * Builds the chat page for browsers: `src/browser.tsx` with React, the AI SDK and the stylesheet,
 * bundled and minified by esbuild into one script and one stylesheet under content-hashed names,
 * and `manifest.json` naming them. Offline: everything comes from the installed packages.
 *
 * `pnpm --filter @service/example-chat-ui build` runs it (so do `pnpm start` at the root and the
 * Express example's `start`); tests call `bundleChatUi(dir)` to build into a folder of their own.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { CHAT_UI_DIST, type ChatAssetManifest, MANIFEST_FILE } from './assets';

const ENTRY = fileURLToPath(new URL('../browser.tsx', import.meta.url));

export interface BundleResult {
  manifest: ChatAssetManifest;
  /** Bytes of each file written. */
  sizes: Record<string, number>;
  ms: number;
}

/**
 * zod keeps every language's error messages behind one namespace, which the AI SDK's
 * `import * as z from 'zod/v4'` keeps whole: a third of the bundle. The page shows none of them
 * (zod speaks English by default), so its locale index is replaced by one exporting English only.
 */
const zodInEnglishOnly: Plugin = {
  name: 'zod-in-english-only',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/]/.test(args.importer)
        ? { path: resolve(args.resolveDir, args.path), namespace: 'zod-locales' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: dirname(args.path),
    }));
  },
};

export async function bundleChatUi(outdir: string = CHAT_UI_DIST): Promise<BundleResult> {
  const started = performance.now();
  // A clean folder: files of an earlier build would otherwise pile up beside the new hashes.
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const result = await build({
    entryPoints: { chat: ENTRY },
    outdir,
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    jsx: 'automatic',
    // Workspace packages as their packages publish them (their built `dist`), not the repository
    // tsconfig's paths to their sources: `@service/react`'s build leaves core's server code out.
    tsconfigRaw: {},
    define: { 'process.env.NODE_ENV': '"production"' },
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
    plugins: [zodInEnglishOnly],
  });
  const outputs = Object.entries(result.metafile.outputs);
  const named = (ext: string) => {
    const found = outputs.find(([path]) => path.endsWith(ext));
    if (!found) throw new Error(`The chat bundle has no ${ext} file.`);
    return basename(found[0]);
  };
  const manifest: ChatAssetManifest = { script: named('.js'), stylesheet: named('.css') };
  writeFileSync(join(outdir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  const sizes = Object.fromEntries(outputs.map(([path, output]) => [basename(path), output.bytes]));
  return { manifest, sizes, ms: Math.round(performance.now() - started) };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { sizes, ms } = await bundleChatUi();
  const files = Object.entries(sizes).map(([name, bytes]) => `${name} (${(bytes / 1024).toFixed(1)} KiB)`);
  process.stdout.write(`Chat page built in ${ms} ms into ${CHAT_UI_DIST}: ${files.join(', ')}\n`);
}
