/**
 * Cron schedules in a time zone, read by croner: five fields (minute, hour, day of month, month,
 * day of week) and an IANA zone, so "9:00 in Paris" stays 9:00 across daylight saving changes.
 */
import { Cron } from 'croner';

export interface Schedule {
  cron: string;
  timezone: string;
}

/** Why a schedule cannot be used, or null when it can. */
export function scheduleProblem(schedule: Schedule): { field: 'cron' | 'timezone'; message: string } | null {
  if (!isTimeZone(schedule.timezone)) {
    return {
      field: 'timezone',
      message: `${JSON.stringify(schedule.timezone)} is not an IANA time zone (e.g. Europe/Paris)`,
    };
  }
  if (schedule.cron.trim().split(/\s+/).length !== 5) {
    return { field: 'cron', message: 'must have five fields: minute hour day-of-month month day-of-week' };
  }
  try {
    if (nextOccurrence(schedule, new Date()) === null) {
      return { field: 'cron', message: 'never occurs' };
    }
  } catch (error) {
    return { field: 'cron', message: (error as Error).message.replace(/^CronPattern: /, '') };
  }
  return null;
}

/**
 * The first occurrence strictly after `after`, or null when there is none. A time the clock skips
 * (spring forward, 2:00 to 3:00) runs once, at the end of the skip: croner does so for a pattern
 * with one time in the skipped hour (`30 2 * * *` runs at 3:00) but drops one with several
 * (`*\/15 2 * * *`), so those are found here.
 */
export function nextOccurrence(schedule: Schedule, after: Date): Date | null {
  const pattern = schedule.cron.trim();
  const next = new Cron(pattern, { timezone: schedule.timezone, paused: true }).nextRun(after);
  return skippedTimeBefore(pattern, schedule.timezone, after, next) ?? next;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const SPAN_MS = 7 * DAY_MS;
const MINUTE_MS = 60 * 1000;

/**
 * The end of the first clock change after `after` (and before `next`) that skipped a time the
 * pattern names, or null. Found to the minute; the skipped wall times are matched as if they
 * were UTC, which has no changes.
 */
function skippedTimeBefore(pattern: string, zone: string, after: Date, next: Date | null): Date | null {
  const until = next?.getTime() ?? after.getTime() + 366 * DAY_MS;
  // Looked for a week at a time: a zone's clock changes are weeks apart at the closest, so a week
  // whose offset grew holds one forward change.
  let offset = offsetAt(zone, after.getTime());
  for (let from = after.getTime(); from < until; from += SPAN_MS) {
    const to = Math.min(from + SPAN_MS, until);
    const fromOffset = offset;
    offset = offsetAt(zone, to);
    if (offset <= fromOffset) continue;
    // The change is within (from, to]: found to the minute, on which every change falls.
    let low = Math.floor(from / MINUTE_MS) * MINUTE_MS;
    let high = Math.ceil(to / MINUTE_MS) * MINUTE_MS;
    while (high - low > MINUTE_MS) {
      const middle = low + Math.floor((high - low) / MINUTE_MS / 2) * MINUTE_MS;
      if (offsetAt(zone, middle) > fromOffset) high = middle;
      else low = middle;
    }
    const change = high;
    if (change <= after.getTime() || change >= until) continue;
    const skippedFrom = change + offsetAt(zone, change - 1);
    const skippedTo = change + offsetAt(zone, change);
    const wall = new Cron(pattern, { timezone: 'UTC', paused: true }).nextRun(new Date(skippedFrom - 1));
    if (wall && wall.getTime() < skippedTo) return new Date(change);
  }
  return null;
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** How far ahead of UTC the zone's clocks are at `at`, in milliseconds. */
function offsetAt(zone: string, at: number): number {
  // Keyed as the zone is spelled in any case, which Intl accepts: one format per zone.
  const key = zone.toLowerCase();
  let format = formats.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(key, format);
  }
  const parts = Object.fromEntries(format.formatToParts(at).map((part) => [part.type, Number(part.value)]));
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - (at - (at % 1000));
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return zone.length > 0;
  } catch {
    return false;
  }
}
