import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./packages/${path}`, import.meta.url));

// Tests import workspace packages from source, so `pnpm test` needs no build first.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@service\/core\/(.*)$/, replacement: `${src('core/src')}/$1/index.ts` },
      { find: /^@service\/core$/, replacement: src('core/src/index.ts') },
      { find: /^@service\/express$/, replacement: src('express/src/index.ts') },
      { find: /^@service\/next$/, replacement: src('next/src/index.ts') },
      { find: /^@service\/sdk$/, replacement: src('sdk/src/index.ts') },
      { find: /^@service\/dev-cli$/, replacement: src('dev-cli/src/index.ts') },
      { find: /^@service\/react$/, replacement: src('react/src/index.ts') },
    ],
  },
  test: {
    include: [
      'scripts/**/*.test.ts',
      'packages/*/src/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'packages/*/test/**/*.test.tsx',
      'examples/*/test/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // At least two test files at a time, where vitest would run one on two cores (it keeps a core
    // for itself): much of a file's time is waiting on loopback servers and child processes, and
    // two at a time take 55% of the time one at a time does. `SERVICE_TEST_WORKERS=N` sets it.
    maxWorkers: Number(process.env.SERVICE_TEST_WORKERS) || Math.max(2, availableParallelism() - 1),
  },
});
