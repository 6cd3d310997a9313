import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  // ESM for import, CommonJS for require (Node 20 cannot require an ES module).
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  // Browsers and edge runtimes too: no Node target-specific output.
  platform: 'neutral',
  target: 'es2022',
  // Only types come from the server's schemas; they are inlined into the declarations.
  noExternal: [/^@service\/core/],
  external: ['eventsource-parser'],
  esbuildOptions(options) {
    // Bundle the schemas from source, so the SDK builds without building the server first.
    options.alias = { '@service/core/schemas': '../core/src/schemas/index.ts' };
  },
});
