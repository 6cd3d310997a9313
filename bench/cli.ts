/**
 * `pnpm bench cli`: wall time of the built `service --version` and `service --help` of both CLIs
 * (the developer CLI's bin, and the framework CLI's, which is the installed `service`) against
 * `node -e 0` (a bare Node start), measured alternately in one run. Target: at most 2x,
 * reported as the baseline's speed over the subject's (so the ratio must be >= 0.5).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { BenchOutcome } from './support/measure.js';

const TARGET_SLOWDOWN = 2;
const RUNS = Number(process.env.BENCH_CLI_RUNS ?? 30);
const root = fileURLToPath(new URL('..', import.meta.url));
const bin = fileURLToPath(new URL('../packages/dev-cli/dist/bin.js', import.meta.url));
const frameworkBin = fileURLToPath(new URL('../packages/framework-cli/bin/service.js', import.meta.url));

function wallMs(args: string[]): number {
  const started = process.hrtime.bigint();
  const run = spawnSync(process.execPath, args, { stdio: 'ignore', env: { ...process.env, NO_COLOR: '1' } });
  const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
  if (run.status !== 0) throw new Error(`node ${args.join(' ')} exited ${run.status}`);
  return elapsed;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

export async function cliBenchmark(): Promise<BenchOutcome> {
  // Measure the bin users install: build it from the current source first.
  execFileSync('pnpm', ['--filter', '@service/dev-cli', '--filter', '@service/framework-cli', 'build'], {
    cwd: root,
    stdio: 'ignore',
  });
  if (!existsSync(bin)) throw new Error(`no built CLI at ${bin}`);
  const cases = {
    baseline: ['-e', '0'],
    version: [bin, '--version'],
    help: [bin, '--help'],
    'fw version': [frameworkBin, '--version'],
    'fw help': [frameworkBin, '--help'],
  };
  const times = Object.fromEntries(Object.keys(cases).map((name) => [name, [] as number[]])) as Record<
    keyof typeof cases,
    number[]
  >;
  for (const args of Object.values(cases)) wallMs(args); // warm the file cache
  for (let i = 0; i < RUNS; i++) {
    for (const [name, args] of Object.entries(cases) as Array<[keyof typeof cases, string[]]>) {
      times[name].push(wallMs(args));
    }
  }
  const baseline = median(times.baseline);
  const slowest = Math.max(
    median(times.version),
    median(times.help),
    median(times['fw version']),
    median(times['fw help']),
  );
  console.log(`\nservice --version / --help vs node -e 0 (median of ${RUNS} alternating runs each)`);
  for (const name of Object.keys(cases) as Array<keyof typeof cases>) {
    const ms = median(times[name]);
    console.log(
      `  ${name.padEnd(10)} ${ms.toFixed(1).padStart(7)} ms   ${(ms / baseline).toFixed(2)}x of node -e 0`,
    );
  }
  const ratio = baseline / slowest;
  const metTarget = slowest <= TARGET_SLOWDOWN * baseline;
  console.log(
    `  slowest is ${(slowest / baseline).toFixed(2)}x of a bare Node start (target <= ${TARGET_SLOWDOWN}x): ${metTarget ? 'met' : 'MISSED'}`,
  );
  return { ratio, target: 1 / TARGET_SLOWDOWN, metTarget };
}
