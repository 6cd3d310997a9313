import { describe, expect, it } from 'vitest';
import { isoWeekStart, noticesFor, spendWindow } from './windows.js';

describe('spend windows', () => {
  it('starts days and months at 00:00 UTC and says when they reset', () => {
    const at = new Date('2026-02-28T23:59:59.999Z');
    expect(spendWindow('daily', at)).toEqual({
      period: 'daily',
      start: '2026-02-28',
      resetsAt: new Date('2026-03-01T00:00:00Z'),
    });
    expect(spendWindow('monthly', at)).toEqual({
      period: 'monthly',
      start: '2026-02-01',
      resetsAt: new Date('2026-03-01T00:00:00Z'),
    });
    expect(spendWindow('monthly', new Date('2026-12-15T10:00:00Z')).resetsAt).toEqual(
      new Date('2027-01-01T00:00:00Z'),
    );
  });

  it('starts ISO weeks on Monday', () => {
    expect(isoWeekStart(new Date('2026-11-22T12:00:00Z'))).toEqual(new Date('2026-11-16T00:00:00Z')); // Sunday
    expect(isoWeekStart(new Date('2026-11-23T00:00:00Z'))).toEqual(new Date('2026-11-23T00:00:00Z')); // Monday
  });

  it('calls for each warning reached and a trip at the cap', () => {
    expect(noticesFor(49, 100, [50, 80])).toEqual([]);
    expect(noticesFor(50, 100, [50, 80])).toEqual(['warn:50']);
    expect(noticesFor(99, 100, [50, 80])).toEqual(['warn:50', 'warn:80']);
    expect(noticesFor(100, 100, [50, 80])).toEqual(['warn:50', 'warn:80', 'tripped']);
  });
});
