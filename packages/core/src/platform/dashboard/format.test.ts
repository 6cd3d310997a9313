import { describe, expect, it } from 'vitest';
import { exactUsd, money, perUnits, unitPrice } from './format.js';

describe('dashboard amounts', () => {
  it('shows a unit price to the cent at least, and every further digit it has', () => {
    expect(unitPrice(3.6)).toBe('USD 3.60');
    expect(unitPrice(0.18)).toBe('USD 0.18');
    expect(unitPrice(15)).toBe('USD 15.00');
    expect(unitPrice(0.0025)).toBe('USD 0.0025');
    expect(unitPrice(0.00000125)).toBe('USD 0.00000125');
    expect(unitPrice(0)).toBe('USD 0.00');
    // Floating point's own noise (0.1 + 0.2) is not shown as digits of the price.
    expect(unitPrice(0.1 + 0.2)).toBe('USD 0.30');
  });

  it('writes micros for a form field exactly, where dividing would round', () => {
    expect(exactUsd(3600)).toBe('0.0036');
    expect(exactUsd(1)).toBe('0.000001');
    expect(exactUsd(25_000_000_000_000)).toBe('25000000');
    expect(exactUsd(1_234_567)).toBe('1.234567');
    expect(exactUsd(Number.MAX_SAFE_INTEGER)).toBe('9007199254.740991');
    // 9007199253999999 / 1e6 rounds up to 9007199254 in floating point.
    expect(exactUsd(9_007_199_253_999_999)).toBe('9007199253.999999');
    expect(exactUsd(-1_500_000)).toBe('-1.5');
    expect(exactUsd(0)).toBe('0');
  });

  it('says how many units a price is for', () => {
    expect(perUnits(1, 'call')).toBe('per call');
    expect(perUnits(1000, 'token')).toBe('per 1,000 tokens');
  });

  it('shows a balance to the cent, and an amount below a cent to the micro', () => {
    expect(money(25_000_000)).toBe('USD 25.00');
    expect(money(4)).toBe('USD 0.000004');
    expect(money(-4)).toBe('-USD 0.000004');
  });
});
