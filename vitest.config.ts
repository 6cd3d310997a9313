import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./packages/${path}`, import.meta.url));

const TEST_FILES = [
  'scripts/**/*.test.ts',
  'packages/*/src/**/*.test.ts',
  'packages/*/test/**/*.test.ts',
  'packages/*/test/**/*.test.tsx',
  'examples/*/test/**/*.test.ts',
];

/** The test files under `dir` (relative to the root), skipping installed and built code. */
function testFiles(dir: string): string[] {
  return readdirSync(new URL(`./${dir}`, import.meta.url), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory())
      return entry.name === 'node_modules' || entry.name === 'dist' ? [] : testFiles(path);
    return /\.test\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

/** Test files that replace a module (`vi.mock`): each needs every module loaded afresh. */
const MOCKING_MODULES = ['packages', 'examples', 'scripts']
  .flatMap(testFiles)
  .filter((path) =>
    /\bvi\.(?:mock|doMock)\(/.test(readFileSync(new URL(`./${path}`, import.meta.url), 'utf8')),
  );

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
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A worker process runs one test file after another with the modules it already loaded (the
    // platform's, the store engine's): loading them again for every file, in a fresh process, was
    // a fifth of the suite's time. Files stay apart otherwise: mocks and stubbed globals are undone
    // after each, and each opens its own store and servers. The few that replace a module (a
    // `vi.mock` of Node's worker threads) need it fresh, so they load everything anew.
    poolOptions: { forks: { isolate: false } },
    projects: [
      // (A project's `include` would be added to one set here, not take its place.)
      {
        extends: true,
        test: {
          name: 'shared',
          include: TEST_FILES,
          exclude: [...configDefaults.exclude, ...MOCKING_MODULES],
        },
      },
      {
        extends: true,
        test: { name: 'isolated', include: MOCKING_MODULES, poolOptions: { forks: { isolate: true } } },
      },
    ],
    // At least two test files at a time, where vitest would run one on two cores (it keeps a core
    // for itself): much of a file's time is waiting on loopback servers and child processes, and
    // two at a time take 55% of the time one at a time does. `SERVICE_TEST_WORKERS=N` sets it.
    maxWorkers: Number(process.env.SERVICE_TEST_WORKERS) || Math.max(2, availableParallelism() - 1),
  },
});
