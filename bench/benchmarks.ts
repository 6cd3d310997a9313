import { balanceBenchmark } from './balance.js';
import { chatBodyBenchmark } from './chat-body.js';
import { cliBenchmark } from './cli.js';
import { doorBenchmark } from './door.js';
import { eventsBenchmark } from './events.js';
import { faultsBenchmark } from './faults.js';
import { proxyBenchmark } from './proxy.js';
import type { BenchOutcome } from './support/measure.js';
import { wireBenchmark } from './wire.js';

/** Every benchmark by the name `pnpm bench <name>` takes. */
export const BENCHMARKS: Record<string, () => Promise<BenchOutcome>> = {
  balance: balanceBenchmark,
  'chat-body': chatBodyBenchmark,
  cli: cliBenchmark,
  door: doorBenchmark,
  events: eventsBenchmark,
  faults: faultsBenchmark,
  proxy: proxyBenchmark,
  wire: wireBenchmark,
};
