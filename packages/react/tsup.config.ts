import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  // Browsers first: no Node target-specific output.
  platform: 'neutral',
  target: 'es2022',
  external: ['react', 'react/jsx-runtime'],
  // The binding paths come from core's app model; bundled from source, so the browser never loads
  // the server package (only the pure path helpers survive tree shaking).
  noExternal: [/^@service\/core/],
  esbuildOptions(options) {
    options.alias = { '@service/core/apps': '../core/src/apps/index.ts' };
    options.jsx = 'automatic';
  },
});
