import { describe, expect, it } from 'vitest';
import { formatUsd, purchaseMicros, wholeCentsMicros } from './processor.js';

describe('purchase amounts', () => {
  it('takes whole cents from 1 to 1000 USD', () => {
    expect(purchaseMicros(1)).toBe(1_000_000);
    expect(purchaseMicros(12.5)).toBe(12_500_000);
    expect(purchaseMicros(0.07 + 19.9)).toBe(19_970_000);
    expect(purchaseMicros(1000)).toBe(1_000_000_000);
    for (const usd of [0, 0.99, 1000.01, 10.001, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(purchaseMicros(usd), String(usd)).toBeNull();
    }
  });

  it('reads an amount as whole cents exactly, so a sliver of a cent is not zero cents', () => {
    expect(wholeCentsMicros(0.01)).toBe(10_000);
    expect(wholeCentsMicros(0)).toBe(0);
    for (const usd of [1e-9, 1e-8, 0.001, 1.005, Number.NaN]) {
      expect(wholeCentsMicros(usd), String(usd)).toBeNull();
    }
  });

  it('shows micros as USD rounded to cents, negative balances included', () => {
    expect(formatUsd(25_000_000)).toBe('USD 25.00');
    expect(formatUsd(1_234_567)).toBe('USD 1.23');
    expect(formatUsd(-1_200)).toBe('USD 0.00');
    expect(formatUsd(5_000)).toBe('USD 0.01');
    expect(formatUsd(-2_500_000)).toBe('-USD 2.50');
  });
});
