import { describe, expect, it } from 'vitest';
import { nextOccurrence } from './schedule.js';

/** The next few occurrences after `from`, as UTC instants. */
function occurrences(cron: string, timezone: string, from: string, count = 3): string[] {
  const out: string[] = [];
  let at = new Date(from);
  for (let i = 0; i < count; i++) {
    const next = nextOccurrence({ cron, timezone }, at);
    if (!next) break;
    out.push(next.toISOString());
    at = next;
  }
  return out;
}

describe('schedules across a clock change', () => {
  // Paris skips 02:00 to 03:00 on 28 March 2027 (01:00 UTC); Sydney 02:00 to 03:00 on 3 October
  // 2027 (16:00 UTC the day before).
  it('runs a skipped time once, at the end of the skip, however many times the pattern names in it', () => {
    for (const cron of ['30 2 * * *', '*/15 2 * * *', '0,30 2 * * *']) {
      expect(occurrences(cron, 'Europe/Paris', '2027-03-27T23:00:00Z', 1), cron).toEqual([
        '2027-03-28T01:00:00.000Z',
      ]);
    }
    // After it, the pattern's own times again, the next day.
    expect(occurrences('*/15 2 * * *', 'Europe/Paris', '2027-03-27T23:00:00Z', 3)).toEqual([
      '2027-03-28T01:00:00.000Z',
      '2027-03-29T00:00:00.000Z',
      '2027-03-29T00:15:00.000Z',
    ]);
    expect(occurrences('*/20 2 * * *', 'Australia/Sydney', '2027-10-02T12:00:00Z', 2)).toEqual([
      '2027-10-02T16:00:00.000Z',
      '2027-10-03T15:00:00.000Z',
    ]);
    // A yearly time in the skip runs that year, not the next.
    expect(occurrences('45 2 28 3 *', 'Europe/Paris', '2027-01-01T00:00:00Z', 2)).toEqual([
      '2027-03-28T01:00:00.000Z',
      '2028-03-28T00:45:00.000Z',
    ]);
  });

  it('leaves times outside a skip where they are, across the change', () => {
    expect(occurrences('30 8 * * *', 'Europe/Paris', '2027-03-27T00:00:00Z', 2)).toEqual([
      '2027-03-27T07:30:00.000Z',
      '2027-03-28T06:30:00.000Z',
    ]);
    expect(occurrences('*/15 2 * * *', 'UTC', '2027-03-27T23:00:00Z', 2)).toEqual([
      '2027-03-28T02:00:00.000Z',
      '2027-03-28T02:15:00.000Z',
    ]);
    // A pattern with nothing in the skipped hour is not moved into it.
    expect(occurrences('0 4 * * *', 'Europe/Paris', '2027-03-27T23:00:00Z', 1)).toEqual([
      '2027-03-28T02:00:00.000Z',
    ]);
  });
});

describe('schedules far apart', () => {
  it('finds the next of a yearly or leap-day time without a long search', () => {
    const started = performance.now();
    expect(occurrences('0 9 29 2 *', 'Europe/Paris', '2028-03-01T00:00:00Z', 1)).toEqual([
      '2032-02-29T08:00:00.000Z',
    ]);
    expect(occurrences('0 9 30 2 *', 'Europe/Paris', '2028-03-01T00:00:00Z', 1)).toEqual([]);
    expect(performance.now() - started).toBeLessThan(250);
  });
});
