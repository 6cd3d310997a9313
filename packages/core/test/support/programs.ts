import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { it } from 'vitest';

/** Whether `program` is an executable on PATH. */
export function onPath(program: string): boolean {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .some((dir) => dir !== '' && existsSync(join(dir, program)));
}

const noticed = new Set<string>();

/**
 * `it` for a test that runs system programs (`curl`, `patch`): skipped where the machine lacks
 * one of them, with one notice per program, and counted as skipped, never failed. `pnpm test`
 * installs them when it may, as it does a Chromium.
 */
export function itWithPrograms(
  programs: string[],
  name: string,
  body: () => unknown,
  timeoutMs?: number,
): void {
  const missing = programs.filter((program) => !onPath(program));
  for (const program of missing) {
    if (noticed.has(program)) continue;
    noticed.add(program);
    console.log(`test: notice: no ${program} on PATH; the tests that run it are skipped.`);
  }
  it.skipIf(missing.length > 0)(name, body, timeoutMs);
}
