/**
 * What the tenants scenario's checks rest on. A check over state the bench did not set is no
 * figure: at 1,000 tenants billing-renew once counted 100 subscriptions still due, because its run
 * of a slot found the runs of the stage before (same minute, same slot) and queued nothing for
 * their tenants (issue 51, docs/performance-log.md). Each stage now sets its own state, runs each
 * job under a slot of its own, and stops the bench when what a check compares with is not what it set.
 */

/** A check's premise did not hold: the bench stops rather than report a figure over state it did not set. */
export class PremiseError extends Error {
  override name = 'PremiseError';
}

/** Throws a PremiseError unless `actual` is what the stage set (`expected`), naming both. */
export function premise(stage: string, what: string, actual: number, expected: number): void {
  if (actual !== expected)
    throw new PremiseError(
      `${stage}: premise does not hold: ${what} is ${actual}, the stage set ${expected}; no figure is taken over state the bench did not set`,
    );
}

const MINUTE_MS = 60_000;

/**
 * Hands each job run of the scenario a schedule slot of its own: the minute it starts in, or, when
 * an earlier run already had that minute, the minute after the last one handed out. Two stages a
 * minute apart once shared a slot (slot = the current minute plus a fixed offset).
 */
export class SlotSource {
  private last = Number.NEGATIVE_INFINITY;

  next(now: number = Date.now()): string {
    const minute = Math.floor(now / MINUTE_MS) * MINUTE_MS;
    this.last = Math.max(minute, this.last + MINUTE_MS);
    return new Date(this.last).toISOString();
  }
}
