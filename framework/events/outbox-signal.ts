import type pg from 'pg';
import { OUTBOX_CHANNEL } from './relay.ts';

// Sent on its own, after the commit that wrote the events: the NOTIFY lock is held only for this
// tiny transaction, which commits without waiting for its WAL flush (it carries no data).
const NOTIFY_SQL = `select set_config('synchronous_commit', 'off', true), pg_notify('${OUTBOX_CHANNEL}', '')`;

/**
 * Wakes the outbox relay once a transaction that wrote outbox rows has committed. A process that
 * runs a relay wakes it directly; a process without one (role web) notifies the workers, with at
 * most one notification in flight and one more queued behind it, however many commits arrive.
 * The relay also polls, so a lost wake-up delays delivery by at most its interval.
 */
export class OutboxSignal {
  private readonly pool: pg.Pool;
  private readonly relays: (() => void)[] = [];
  private notifying = false;
  private again = false;

  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  /** Registers a relay running in this process; from then on commits wake it instead of notifying. */
  relayHere(wake: () => void): void {
    this.relays.push(wake);
  }

  committed(): void {
    if (this.relays.length > 0) {
      for (const wake of this.relays) wake();
      return;
    }
    this.notify();
  }

  private notify(): void {
    if (this.notifying) {
      this.again = true;
      return;
    }
    this.notifying = true;
    this.pool
      .query(NOTIFY_SQL)
      .catch(() => {})
      .finally(() => {
        this.notifying = false;
        if (this.again) {
          this.again = false;
          this.notify();
        }
      });
  }
}
