/**
 * Paces a busy tenant's batches. A batch costs one statement and one write per open stream, so a
 * tenant whose changes arrive faster than one batch per `intervalMs` should not get a batch per
 * change: changes that arrive within `intervalMs` of the tenant's last batch are held, and go out
 * together in one batch at the next tick (the hub ticks every `intervalMs`). A change to a tenant
 * whose last batch began longer ago goes out at once: a quiet tenant waits for nothing. What a
 * change waits for is thus at most `intervalMs` more than without pacing. `intervalMs` 0: no pacing.
 */
export class BatchPacer<T> {
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly startedAt = new Map<T, number>();
  private readonly held = new Set<T>();

  constructor(intervalMs: number, now: () => number = () => performance.now()) {
    this.intervalMs = intervalMs;
    this.now = now;
  }

  get paces(): boolean {
    return this.intervalMs > 0;
  }

  /** True: the group's batch may start now; false: it is held until the next release. */
  admit(group: T): boolean {
    if (this.held.has(group)) return false;
    const last = this.startedAt.get(group);
    if (last === undefined || this.now() - last >= this.intervalMs) return true;
    this.held.add(group);
    return false;
  }

  /** The group's batch begins now. */
  started(group: T): void {
    if (this.intervalMs > 0) this.startedAt.set(group, this.now());
  }

  /** The groups held since the last tick, now free to run (one batch each, however many changes they gathered). */
  release(): T[] {
    const due = [...this.held];
    this.held.clear();
    return due;
  }

  /** The group has no stream left: nothing of it is kept. */
  forget(group: T): void {
    this.startedAt.delete(group);
    this.held.delete(group);
  }
}
