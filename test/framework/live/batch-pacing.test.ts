import { describe, expect, it } from 'vitest';
import { BatchPacer } from '../../../framework/live/pacing.ts';

/**
 * Issue 45, point 9 (the list beside 1,000 streams): a busy tenant's changes are gathered into one
 * batch per tick (one statement, one write per stream) instead of a batch each; a quiet tenant's
 * change goes out at once. The clock is the test's: no wall-clock time is measured here.
 */
function pacer(intervalMs = 100) {
  const clock = { now: 0 };
  return { clock, pacer: new BatchPacer<string>(intervalMs, () => clock.now) };
}

/** The batches a tenant gets for changes arriving at `times` (ms), a tick every 100 ms: one per admitted change or release. */
function batchesFor(times: readonly number[], intervalMs = 100): number[][] {
  const { clock, pacer: p } = pacer(intervalMs);
  const batches: number[][] = [];
  let waiting: number[] = [];
  const tick = 100;
  let nextTick = tick;
  for (const at of [...times, Number.POSITIVE_INFINITY]) {
    while (nextTick <= at && nextTick < 10_000) {
      clock.now = nextTick;
      if (p.release().length > 0) {
        p.started('t');
        batches.push(waiting);
        waiting = [];
      }
      nextTick += tick;
    }
    if (at === Number.POSITIVE_INFINITY) break;
    clock.now = at;
    waiting.push(at);
    if (p.admit('t')) {
      p.started('t');
      batches.push(waiting);
      waiting = [];
    }
  }
  return batches;
}

describe('batches of a busy tenant are paced', () => {
  it("sends a quiet tenant's change at once", () => {
    const { pacer: p } = pacer();
    expect(p.admit('quiet')).toBe(true);
  });

  it('gathers the changes that arrive within the interval after a batch into one batch at the next tick', () => {
    // Ten changes 5 ms apart: the first goes at once, the nine others make one batch, not nine.
    const batches = batchesFor([10, 15, 20, 25, 30, 35, 40, 45, 50, 55]);
    expect(batches).toEqual([[10], [15, 20, 25, 30, 35, 40, 45, 50, 55]]);
  });

  it('holds a tenant at most once per tick: 200 changes a second make at most one batch per tick', () => {
    const times = Array.from({ length: 200 }, (_, i) => 1000 + i * 5);
    const batches = batchesFor(times);
    expect(batches.flat()).toEqual(times);
    // 1 s of changes, ticks every 100 ms: the first at once, then one per tick.
    expect(batches.length).toBeLessThanOrEqual(11);
  });

  it('sends at once again once the interval has passed since the last batch', () => {
    const { clock, pacer: p } = pacer();
    expect(p.admit('t')).toBe(true);
    p.started('t');
    clock.now = 50;
    expect(p.admit('t')).toBe(false);
    expect(p.admit('t')).toBe(false);
    expect(p.release()).toEqual(['t']);
    p.started('t');
    clock.now = 250;
    expect(p.admit('t')).toBe(true);
  });

  it('paces tenants apart: a busy tenant holds back no other', () => {
    const { clock, pacer: p } = pacer();
    p.started('busy');
    clock.now = 10;
    expect(p.admit('busy')).toBe(false);
    expect(p.admit('quiet')).toBe(true);
    expect(p.release()).toEqual(['busy']);
  });

  it('does not pace at an interval of 0', () => {
    const { pacer: p } = pacer(0);
    p.started('t');
    expect(p.admit('t')).toBe(true);
    expect(p.admit('t')).toBe(true);
    expect(p.paces).toBe(false);
  });

  it('forgets a tenant whose streams all closed', () => {
    const { clock, pacer: p } = pacer();
    p.started('t');
    clock.now = 10;
    expect(p.admit('t')).toBe(false);
    p.forget('t');
    expect(p.release()).toEqual([]);
    expect(p.admit('t')).toBe(true);
  });
});
