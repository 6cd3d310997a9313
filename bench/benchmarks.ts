import { balanceBenchmark } from './balance.js';
import type { BenchOutcome } from './support/measure.js';

/** Every benchmark by the name `pnpm bench <name>` takes. */
export const BENCHMARKS: Record<string, () => Promise<BenchOutcome>> = {
  balance: balanceBenchmark,
};
