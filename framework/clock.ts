import type { Clock } from './contracts/clock.ts';

export type { Clock } from './contracts/clock.ts';

/** The machine's clock. */
export const systemClock: Clock = { now: () => new Date() };

/**
 * A clock that can be set: it reads the time it was set to, then keeps running from there, so
 * durations measured during a test or a job run stay real. Unset, it reads the system time.
 */
export class SettableClock implements Clock {
  private offsetMs = 0;

  constructor(at?: Date) {
    if (at) this.set(at);
  }

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  /** From now on the clock reads `at`, and runs on from it. */
  set(at: Date): void {
    if (Number.isNaN(at.getTime())) throw new RangeError('the clock cannot be set to an invalid date');
    this.offsetMs = at.getTime() - Date.now();
  }

  /** Moves the clock forward (or back, with a negative amount) by ms milliseconds. */
  advance(ms: number): void {
    this.offsetMs += ms;
  }

  /** Back to the system time. */
  reset(): void {
    this.offsetMs = 0;
  }
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** The instant ms milliseconds after `from`. */
export const after = (from: Date, ms: number): Date => new Date(from.getTime() + ms);
