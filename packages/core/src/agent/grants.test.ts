import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../internal/canonical-json.js';
import { inputHashOf } from './grants.js';

describe('canonicalJson', () => {
  it('sorts object keys at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('hashes equal inputs alike whatever their key order, and different inputs apart', () => {
    expect(inputHashOf({ a: 1, b: 2 })).toBe(inputHashOf({ b: 2, a: 1 }));
    expect(inputHashOf({ a: 1 })).not.toBe(inputHashOf({ a: 2 }));
    expect(inputHashOf({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
  });
});
