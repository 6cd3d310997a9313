import { defineConfig } from 'tsup';

/** One script and one stylesheet for every page, the chart library bundled in: nothing from a CDN. */
export default defineConfig({
  entry: { dashboard: 'src/dashboard.ts' },
  format: ['esm'],
  platform: 'browser',
  target: 'es2020',
  minify: true,
  clean: true,
  sourcemap: false,
  dts: false,
  outExtension: () => ({ js: '.js' }),
  noExternal: [/.*/],
});
