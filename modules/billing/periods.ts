import type { PlanInterval } from './tables.ts';

const MS_PER_DAY = 24 * 60 * 60 * 1000;

/** Days in a month (month 0-11 of year, UTC); day 0 of the next month is this month's last. */
const daysInMonth = (year: number, month: number): number => new Date(Date.UTC(year, month + 1, 0)).getUTCDate();

/**
 * When a period that starts at `start` ends: one month (a year) later, on the subscription's
 * anchor day, clamped to the month's length (anchor 31: Feb 28 or 29, Mar 31, Apr 30), at the
 * start's time of day. Each end is computed from the anchor, never from the previous clamped end,
 * so a January 31 subscription ends February 28, then March 31.
 */
export function periodEnd(start: Date, interval: PlanInterval, anchorDay: number): Date {
  const months = interval === 'month' ? 1 : 12;
  const target = start.getUTCMonth() + months;
  const year = start.getUTCFullYear() + Math.floor(target / 12);
  const month = target % 12;
  const day = Math.min(anchorDay, daysInMonth(year, month));
  return new Date(
    Date.UTC(
      year,
      month,
      day,
      start.getUTCHours(),
      start.getUTCMinutes(),
      start.getUTCSeconds(),
      start.getUTCMilliseconds(),
    ),
  );
}

export const addDays = (at: Date, days: number): Date => new Date(at.getTime() + days * MS_PER_DAY);

/** Dunning: a subscription past due for longer than this is cancelled (SPEC, Limits: billing grace). */
export const GRACE_DAYS = 7;

export const graceOver = (pastDueSince: Date, now: Date): boolean =>
  now.getTime() - pastDueSince.getTime() > GRACE_DAYS * MS_PER_DAY;
