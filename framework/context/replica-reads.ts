import type { Db } from '../contracts/database.ts';
import type { ReplicaReader } from '../contracts/services.ts';
import type { Transactions } from '../contracts/transaction.ts';
import type { ReplicaSeries } from '../observability/metrics.ts';
import { ProblemError } from '../errors.ts';
import type { TenantRef } from './tenant.ts';
import type { AfterTransaction, TenantTransactions } from './tx.ts';
import { holdsPermission } from '../access/guard.ts';

/**
 * Reads that may lag, served by a streaming replica (database.replica_url): a route declares it
 * may read from the replica (RouteDefinition.replica), and each of its requests runs its
 * transactions here on the replica while the replica's lag is within database.replica_max_lag_ms,
 * on the primary otherwise. The lag is checked once a second, by a timer of its own: never by a
 * request, never inside a transaction.
 */

/** How often the replica's lag is read. */
export const REPLICA_LAG_CHECK_MS = 1000;

// The replay lag in milliseconds: now() - pg_last_xact_replay_timestamp(), the time since the last
// transaction the replica replayed was committed on the primary. A replica that has replayed all
// it received while streaming is not behind, however long the primary has been idle (the
// timestamp alone would call a quiet primary's replica lagging): 0. pg_stat_wal_receiver shows its
// status only to superusers and members of pg_read_all_stats; to anyone else the timestamp alone
// counts, which errs towards the primary. A server that is no replica at all is not behind.
const LAG = `
select case when not pg_is_in_recovery() then 0
            when pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
                 and exists (select 1 from pg_stat_wal_receiver where status = 'streaming') then 0
            else extract(epoch from now() - pg_last_xact_replay_timestamp()) * 1000
       end::float8 as lag_ms`;

export class ReplicaReads implements ReplicaReader {
  private readonly db: Db;
  private readonly replica: TenantTransactions;
  private readonly primary: TenantTransactions;
  /** The replica's transactions for a request that needs no word of a fallback. */
  private readonly onReplica: Transactions;
  private readonly maxLagMs: number;
  private readonly series: ReplicaSeries | undefined;
  private usable = false;
  private checking = false;
  private timer: NodeJS.Timeout | undefined;

  /**
   * db: a pool on the replica; replica: TenantTransactions over it (made with `replica: true`);
   * primary: the service's own.
   */
  constructor(
    db: Db,
    replica: TenantTransactions,
    primary: TenantTransactions,
    maxLagMs: number,
    series?: ReplicaSeries,
  ) {
    this.db = db;
    this.replica = replica;
    this.onReplica = new ReplicaFirst(replica, primary);
    this.primary = primary;
    this.maxLagMs = maxLagMs;
    this.series = series;
  }

  /** Reads the lag once, then once a second. Reads go to the primary until a check finds the replica within bounds. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), REPLICA_LAG_CHECK_MS);
    this.timer.unref();
  }

  /**
   * The transactions for one request that may read from the replica, counted by where it is sent.
   * onFallback: told when a transaction sent to the replica was served by the primary after all
   * (a caller the replica did not know yet).
   */
  forRead(onFallback?: () => void): { transactions: Transactions; replica: boolean } {
    const replica = this.usable;
    this.series?.reads.inc({ served_by: replica ? 'replica' : 'primary' });
    if (!replica) return { transactions: this.primary, replica };
    return {
      transactions: onFallback ? new ReplicaFirst(this.replica, this.primary, onFallback) : this.onReplica,
      replica,
    };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.db.close();
  }

  private async check(): Promise<void> {
    // A check still unanswered a whole interval later: the replica has stopped answering (a hung
    // server, a dropped network path), and requests sent there would wait as long. As good as
    // infinitely behind until a check is answered again; the waiting check is not doubled.
    if (this.checking) {
      this.record(undefined);
      return;
    }
    this.checking = true;
    let lagMs: number | undefined;
    try {
      const { rows } = await this.db.pool.query<{ lag_ms: number | null }>(LAG);
      lagMs = rows[0]?.lag_ms ?? undefined;
    } catch {
      // Unreachable, or refusing: as good as infinitely behind.
    } finally {
      this.checking = false;
    }
    this.series?.checks.inc();
    this.record(lagMs);
  }

  /** The lag found (undefined: none could be read), and whether reads may go to the replica. */
  private record(lagMs: number | undefined): void {
    this.usable = lagMs !== undefined && lagMs <= this.maxLagMs;
    this.series?.lag.set(lagMs === undefined ? Number.POSITIVE_INFINITY : lagMs / 1000);
    this.series?.inUse.set(this.usable ? 1 : 0);
  }
}

// The refusals of a caller that a replica behind the primary may give wrongly: a session or token
// made (or a permission granted) since the last transaction it replayed.
const CALLER_REFUSALS = new Set(['AUTH_REQUIRED', 'AUTH_FORBIDDEN', 'TOKEN_INVALID']);

/**
 * The replica's transactions, with one correction: a caller the replica refuses (unknown, or
 * without the permission) who came with a credential is judged again by the primary, which may
 * know a session or a grant the replica has not replayed yet. The replica's attempt then counts
 * for nothing: work it registered for after its rollback (a failed bearer attempt's count) is
 * dropped, and the primary's attempt registers its own.
 */
class ReplicaFirst implements Transactions {
  private readonly replica: TenantTransactions;
  private readonly primary: TenantTransactions;
  private readonly onFallback: (() => void) | undefined;

  constructor(replica: TenantTransactions, primary: TenantTransactions, onFallback?: () => void) {
    this.replica = replica;
    this.primary = primary;
    this.onFallback = onFallback;
  }

  run: Transactions['run'] = async (tenant, fn, options = {}) => {
    const held: AfterTransaction[] = [];
    try {
      return await this.replica.run(tenant, (tx) => fn({ ...tx, onRollback: (hook) => void held.push(hook) }), options);
    } catch (err) {
      const credential = options.sessionHash !== undefined || options.tokenHash !== undefined;
      if (credential && err instanceof ProblemError && CALLER_REFUSALS.has(err.code)) {
        this.onFallback?.();
        return this.primary.run(tenant, fn, options);
      }
      // As TenantTransactions.run runs them: after the rollback; a failing hook's error is the one thrown.
      for (const hook of held) await hook();
      throw err;
    }
  };

  runStatement: Transactions['runStatement'] = async (tenant: TenantRef, work, options = {}) => {
    const done = await this.replica.runStatement(tenant, work, options);
    const refused = options.sessionHash !== undefined && !holdsPermission(done.session, work.permission);
    if (!refused) return done;
    this.onFallback?.();
    return this.primary.runStatement(tenant, work, options);
  };
}
