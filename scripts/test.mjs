#!/usr/bin/env node
/**
 * `pnpm test`: the whole suite on a fresh machine, ending with one line `N passed, N failed`.
 *
 * Without arguments it first gets what the suite needs: the packages and the Next.js example
 * built, a Chromium for the page tests, a throwaway PostgreSQL cluster for the store suites'
 * second run, and `curl` and `patch` for the tests that run them (each found, else installed when this process may, else skipped with a notice and
 * counted as skipped, never failed; `SERVICE_TEST_SKIP_BUILD=1` keeps the build there is, `SERVICE_TEST_POSTGRES=0` and
 * `SERVICE_TEST_BROWSER=0` skip the PostgreSQL run and the page suites, `SERVICE_TEST_WORKERS=N` runs N test files at a time). With arguments it runs only vitest, passing them on (a file
 * filter, say), on the machine as it is.
 *
 * A test file that fails to load has no test results of its own; it counts as one failure so a
 * broken import can never pass as "0 failed". A failed build counts as one failure too.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { prepareChromium, prepareTools, startThrowawayPostgres } from './test-system.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const results = join(root, '.test-results.json');
const args = process.argv.slice(2);
const whole = args.length === 0;
// `SERVICE_TEST_SKIP_BUILD=1`: a second run on the same checkout reuses the first run's build.
const build = whole && process.env.SERVICE_TEST_SKIP_BUILD !== '1';

let failed = 0;
/** One line per failed test (or file that failed outside its tests), printed above the count. */
const failures = [];
const env = { ...process.env };
let postgres = null;
if (build) {
  for (const [name, command] of [
    ['build', ['build']],
    ['Next.js example build', ['--filter', '@service/example-next-host', 'build']],
  ]) {
    console.log(`\ntest: ${name}`);
    const step = spawnSync('pnpm', command, { cwd: root, stdio: 'inherit' });
    if (step.status !== 0) {
      console.log(`test: !!! ${name} failed`);
      failures.push(`the ${name} step`);
      failed += 1;
    }
  }
}
if (whole) {
  prepareTools();
  // `SERVICE_TEST_BROWSER=0`: the page suites skipped.
  if (env.SERVICE_TEST_BROWSER === '0') env.CHROMIUM_PATH = '';
  else {
    const chromium = prepareChromium();
    if (chromium) env.CHROMIUM_PATH = chromium;
  }
  // `SERVICE_TEST_POSTGRES=0`: the store suites on the embedded store only.
  if (!env.DATABASE_URL && env.SERVICE_TEST_POSTGRES !== '0') {
    postgres = await startThrowawayPostgres();
    if (postgres?.url) env.DATABASE_URL = postgres.url;
    if (postgres?.failed) {
      failures.push('starting the PostgreSQL server');
      failed += 1;
    }
  }
}

rmSync(results, { force: true });
const vitest = createRequire(join(root, 'package.json')).resolve('vitest/vitest.mjs');
const run = spawnSync(
  process.execPath,
  [vitest, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${results}`, ...args],
  { cwd: root, stdio: 'inherit', env },
);
postgres?.stop();

let passed = 0;
let skipped = 0;
/** A failure's first line without colours, to name it in one line. */
const firstLine = (messages) =>
  stripVTControlCharacters(String(messages?.find(Boolean) ?? 'no message'))
    .split('\n')[0]
    .slice(0, 300);
if (existsSync(results)) {
  const report = JSON.parse(readFileSync(results, 'utf8'));
  passed = report.numPassedTests;
  failed += report.numFailedTests;
  skipped = report.numPendingTests + report.numTodoTests;
  for (const file of report.testResults ?? []) {
    const failedTests = (file.assertionResults ?? []).filter((t) => t.status === 'failed');
    const where = relative(root, file.name);
    for (const test of failedTests)
      failures.push(`${where} > ${test.fullName}: ${firstLine(test.failureMessages)}`);
    if (file.status === 'failed' && failedTests.length === 0) {
      failed += 1;
      failures.push(`${where}: ${firstLine([file.message])}`);
    }
  }
} else {
  failures.push('vitest wrote no report');
  failed += 1;
}
if (run.status !== 0 && failed === 0) failed = 1;

// The failures again, one line each, just above the count: a CI log is often read from its tail.
for (const failure of failures) console.log(`failed: ${failure}`);
if (skipped > 0) console.log(`${skipped} skipped`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
