import { describe, expect, it } from 'vitest';
import { rangeOf } from './byte-range.js';

describe('rangeOf', () => {
  it('reads one range of bytes, cut to the file', () => {
    expect(rangeOf('bytes=0-0', 10)).toEqual({ range: { start: 0, end: 0 } });
    expect(rangeOf('bytes=4-', 10)).toEqual({ range: { start: 4, end: 9 } });
    expect(rangeOf('bytes=-3', 10)).toEqual({ range: { start: 7, end: 9 } });
    expect(rangeOf('bytes=-30', 10)).toEqual({ range: { start: 0, end: 9 } });
    expect(rangeOf('bytes=8-99', 10)).toEqual({ range: { start: 8, end: 9 } });
  });

  it('serves the whole file for what it does not serve, and refuses a range past the end', () => {
    for (const header of [
      undefined,
      null,
      '',
      'bytes=',
      'bytes=-',
      'bytes=1-2,4-5',
      'pages=1-2',
      'bytes=5-1',
      'bytes=1.5-2',
    ])
      expect(rangeOf(header, 10), String(header)).toEqual({ whole: true });
    for (const [header, size] of [
      ['bytes=10-', 10],
      ['bytes=0-', 0],
      ['bytes=-0', 10],
      ['bytes=-5', 0],
    ] as const)
      expect(rangeOf(header, size), header).toEqual({ unsatisfiable: true });
  });
});
