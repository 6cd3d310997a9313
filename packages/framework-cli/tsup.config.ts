import { defineConfig } from 'tsup';

export default defineConfig({
  // bin.ts is the executable; index.ts exports run() for embedding and tests.
  entry: { bin: 'src/bin.ts', index: 'src/index.ts' },
  format: ['esm'],
  dts: { entry: { index: 'src/index.ts' } },
  clean: true,
  // Each command is its own chunk, loaded only when it runs: `--version` reads two small files.
  splitting: true,
  sourcemap: true,
  platform: 'node',
  target: 'node20',
  // Core, the developer CLI, esbuild, the AI SDK and the TypeScript compiler are imported from the
  // installed packages, lazily.
  external: [/^@service\//, 'esbuild', 'ai', 'zod', 'typescript'],
});
