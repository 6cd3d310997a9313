/**
 * `pnpm bench [name ...]`: runs the named benchmarks (all when none is named). Each measures the
 * subject and a baseline in the same run and prints their ratio: these machines are noisy, so
 * only ratios taken together are comparable.
 */
import { BENCHMARKS } from './benchmarks.js';

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(name in BENCHMARKS));
if (unknown.length > 0) {
  console.error(`Unknown benchmark: ${unknown.join(', ')}. Known: ${Object.keys(BENCHMARKS).join(', ')}`);
  process.exit(2);
}
let missed = 0;
for (const name of wanted.length > 0 ? wanted : Object.keys(BENCHMARKS)) {
  const outcome = await BENCHMARKS[name]!();
  if (!outcome.metTarget) missed++;
}
process.exit(missed === 0 ? 0 : 1);
