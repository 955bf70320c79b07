/**
 * The one source of the time for every decision that compares with it: session and token expiry,
 * throttle windows, sweeps, reissue delays, schedules. Code asks the clock and hands SQL the time
 * as a parameter, so tests and `npm run job -- <name> --at <time>` can move it. Column defaults
 * (created_at, updated_at) stay on the database's own clock: they record, they do not decide.
 */
export interface Clock {
  now(): Date;
}
