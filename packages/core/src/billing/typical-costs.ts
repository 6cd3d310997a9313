import { TtlCache } from '../internal/ttl-cache.js';

/**
 * Each model's running average of what its calls really cost, on this instance: what a
 * token-metered call that does not bound its output holds at admission. Weighted toward recent
 * calls (each settled call moves the average a quarter of the way to its cost), forgotten after
 * an hour without calls (prices change), and bounded in size.
 *
 * @see docs/billing.md "Admission"
 */
const WEIGHT = 0.25;

export class TypicalCosts {
  readonly #averages = new TtlCache<string, number>({ ttlMs: 60 * 60 * 1000, maxEntries: 1000 });

  /** The model's average cost in micros, or null before one of its calls has settled here. */
  of(provider: string, model: string | null): number | null {
    const average = this.#averages.get(keyOf(provider, model));
    return average === undefined ? null : Math.ceil(average);
  }

  /** Records a settled call's real cost (calls billed an estimate teach nothing). */
  observe(provider: string, model: string | null, costMicros: number): void {
    const key = keyOf(provider, model);
    const average = this.#averages.get(key);
    this.#averages.set(key, average === undefined ? costMicros : average + WEIGHT * (costMicros - average));
  }
}

function keyOf(provider: string, model: string | null): string {
  return `${provider}\u0000${model ?? ''}`;
}
