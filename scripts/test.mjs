#!/usr/bin/env node
/**
 * `pnpm test`: every test through vitest, then one summary line `N passed, N failed`.
 *
 * A test file that fails to load has no test results of its own; it counts as one failure so a
 * broken import can never pass as "0 failed". Extra arguments go to vitest (a file filter, say).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const results = join(root, '.test-results.json');
rmSync(results, { force: true });

const vitest = createRequire(join(root, 'package.json')).resolve('vitest/vitest.mjs');
const run = spawnSync(
  process.execPath,
  [
    vitest,
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${results}`,
    ...process.argv.slice(2),
  ],
  { cwd: root, stdio: 'inherit' },
);

let passed = 0;
let failed = 0;
if (existsSync(results)) {
  const report = JSON.parse(readFileSync(results, 'utf8'));
  passed = report.numPassedTests;
  failed = report.numFailedTests;
  for (const file of report.testResults ?? []) {
    const failedTests = (file.assertionResults ?? []).filter((t) => t.status === 'failed').length;
    if (file.status === 'failed' && failedTests === 0) failed += 1;
  }
} else {
  failed = 1;
}
if (run.status !== 0 && failed === 0) failed = 1;

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
