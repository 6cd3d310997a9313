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

/** The first occurrence strictly after `after`, or null when there is none. */
export function nextOccurrence(schedule: Schedule, after: Date): Date | null {
  const cron = new Cron(schedule.cron.trim(), { timezone: schedule.timezone, paused: true });
  return cron.nextRun(after);
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return zone.length > 0;
  } catch {
    return false;
  }
}
