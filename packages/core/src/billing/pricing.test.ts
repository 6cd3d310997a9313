import { describe, expect, it } from 'vitest';
import {
  costMicros,
  costOfCall,
  divideHalfEven,
  holdForCall,
  type PriceList,
  parseDecimal,
  priceWithMarginUsd,
  rateFor,
} from './pricing.js';

describe('pricing', () => {
  it('rounds half to even', () => {
    expect(divideHalfEven(5n, 2n)).toBe(2n);
    expect(divideHalfEven(7n, 2n)).toBe(4n);
    expect(divideHalfEven(6n, 4n)).toBe(2n);
    expect(divideHalfEven(10n, 4n)).toBe(2n);
    expect(divideHalfEven(11n, 4n)).toBe(3n);
    expect(divideHalfEven(9n, 4n)).toBe(2n);
  });

  it('costs quantity x unit price x (1 + margin) in whole micros', () => {
    // 1 call at 1000 micros with 20 % margin = 1200 micros.
    expect(costMicros([{ quantity: 1, unitPriceMicros: '1000' }], '20')).toBe(1200);
    // 1000 tokens at 0.15 micros + 500 at 0.6 micros = 450 micros, x 1.2 = 540.
    expect(
      costMicros(
        [
          { quantity: 1000, unitPriceMicros: '0.15' },
          { quantity: 500, unitPriceMicros: '0.6' },
        ],
        '20',
      ),
    ).toBe(540);
  });

  it('rounds the total once, half to even, without float error', () => {
    // 5 tokens x 0.5 micros = 2.5 -> 2 (even); 7 x 0.5 = 3.5 -> 4.
    expect(costMicros([{ quantity: 5, unitPriceMicros: '0.5' }], '0')).toBe(2);
    expect(costMicros([{ quantity: 7, unitPriceMicros: '0.5' }], '0')).toBe(4);
    // 3 x 0.1 is exactly 0.3 here (0.30000000000000004 in floats).
    expect(costMicros([{ quantity: 3, unitPriceMicros: '0.1' }], '0')).toBe(0);
    expect(costMicros([{ quantity: 30, unitPriceMicros: '0.1' }], '12.5')).toBe(3);
  });

  it('refuses negative, fractional or malformed input', () => {
    expect(() => costMicros([{ quantity: -1, unitPriceMicros: '1' }], '0')).toThrow(RangeError);
    expect(() => costMicros([{ quantity: 1.5, unitPriceMicros: '1' }], '0')).toThrow(RangeError);
    expect(() => parseDecimal('1e3', 4)).toThrow(RangeError);
    expect(() => parseDecimal('-1', 4)).toThrow(RangeError);
    expect(() => parseDecimal('0.123456789', 4)).toThrow(/decimals/);
    expect(parseDecimal('1.5000000', 4)).toBe(15000n);
  });

  it('states public prices in USD with the margin applied', () => {
    // 0.15 micros per token = 0.00000015 USD; with 20 % = 0.00000018 USD.
    expect(priceWithMarginUsd('0.15', '20')).toBeCloseTo(0.00000018, 14);
  });

  describe('metered calls', () => {
    const tokens: PriceList = {
      dialect: 'openai',
      holdMicros: 10_000,
      marginPercent: '20',
      rates: [
        { meter: 'input_tokens', model: '', unitPriceMicros: '0.5' },
        { meter: 'output_tokens', model: '', unitPriceMicros: '1.5' },
        { meter: 'input_tokens', model: 'large', unitPriceMicros: '2' },
      ],
    };
    const perCall: PriceList = {
      dialect: 'per_call',
      holdMicros: 10_000,
      marginPercent: '20',
      rates: [{ meter: 'call', model: '', unitPriceMicros: '1000' }],
    };

    it("prices a model by its own rate, else by the provider's any-model rate", () => {
      expect(rateFor(tokens.rates, 'input_tokens', 'large')?.unitPriceMicros).toBe('2');
      expect(rateFor(tokens.rates, 'input_tokens', 'small')?.unitPriceMicros).toBe('0.5');
      expect(rateFor(tokens.rates, 'call', null)).toBeUndefined();
    });

    const shape = (model: string | null, maxOutputTokens: number | null = null, inputBytes = 0) => ({
      model,
      maxOutputTokens,
      inputBytes,
    });

    it('holds a per-call price exactly and a token-metered estimate, and nothing without a price', () => {
      expect(holdForCall(perCall, shape(null))).toEqual({
        holdMicros: 1200,
        worstMicros: 1200,
        bounded: true,
      });
      expect(holdForCall(tokens, shape('small'))).toEqual({
        holdMicros: 10_000,
        worstMicros: 10_000,
        bounded: false,
      });
      expect(holdForCall({ ...tokens, rates: [] }, shape('small'))).toBeNull();
      expect(holdForCall({ ...perCall, rates: [] }, shape(null))).toBeNull();
    });

    it("holds the model's running average when known, never less than the input estimate", () => {
      expect(holdForCall(tokens, shape('small'), 900)?.holdMicros).toBe(900);
      // 40 000 bytes = 10 000 input tokens x 0.5 x 1.2 = 6000 micros.
      expect(holdForCall(tokens, shape('small', null, 40_000), 900)?.holdMicros).toBe(6000);
    });

    it('bounds a call by its max_tokens: worst case = input estimate + bound at the output price', () => {
      // 400 bytes = 100 tokens x 0.5 = 50; 1000 x 1.5 = 1500; (50 + 1500) x 1.2 = 1860.
      expect(holdForCall(tokens, shape('small', 1000, 400), 900)).toEqual({
        holdMicros: 900,
        worstMicros: 1860,
        bounded: true,
      });
      // Without history the provider's estimate is held, but never more than the bound.
      expect(holdForCall(tokens, shape('small', 1000, 400))).toEqual({
        holdMicros: 1860,
        worstMicros: 1860,
        bounded: true,
      });
    });

    it('costs a call once in total and each meter on its own', () => {
      // 10 x 0.5 + 20 x 1.5 = 35 micros, x 1.2 = 42; unpriced meters cost nothing.
      expect(costOfCall(tokens, 'small', { input_tokens: 10, output_tokens: 20, call: 1 })).toEqual({
        total: 42,
        perMeter: { input_tokens: 6, output_tokens: 36 },
      });
    });

    it('lets per-meter costs differ from the total by up to a micro per meter, as reports say', () => {
      // 1 x 0.5 x 1.2 = 0.6 -> 1 and 1 x 1.5 x 1.2 = 1.8 -> 2, but the call is 2.4 -> 2.
      const { total, perMeter } = costOfCall(tokens, 'small', { input_tokens: 1, output_tokens: 1 });
      expect({ total, perMeter }).toEqual({ total: 2, perMeter: { input_tokens: 1, output_tokens: 2 } });
      const summed = Object.values(perMeter).reduce((sum, cost) => sum + cost, 0);
      expect(Math.abs(summed - total)).toBeLessThanOrEqual(Object.keys(perMeter).length);
    });
  });
});
