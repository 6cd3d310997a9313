import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  // Browsers and edge runtimes too: no Node target-specific output.
  platform: 'neutral',
  target: 'es2022',
  // The wire schemas are the server's own, bundled in, so the SDK does not depend on the server.
  noExternal: [/^@service\/core/],
  external: ['zod', 'eventsource-parser'],
  esbuildOptions(options) {
    // Bundle the schemas from source, so the SDK builds without building the server first.
    options.alias = { '@service/core/schemas': '../core/src/schemas/index.ts' };
  },
});
