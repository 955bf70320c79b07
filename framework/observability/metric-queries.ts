import type pg from 'pg';

// Read at scrape time, as the database's owner (the outbox and tenants are global tables), in one
// statement on one connection. The unrelayed count walks the outbox's partial index of unrelayed
// rows: as cheap as the backlog is short.
const READ = `
select (select count(*)::int from outbox where relayed_at is null) as unrelayed,
       coalesce((select json_object_agg(status, n) from (select status, count(*)::int as n from tenants group by status) t), '{}') as tenants`;

export interface DatabaseFigures {
  unrelayed: number;
  tenants: Record<string, number>;
}

/**
 * Whether a scrape should leave the pool alone: requests already wait for a connection. A scrape
 * then keeps the gauges' previous values instead of queueing behind the requests (and answering
 * only after the acquire timeout); the pool gauges, read from the pool itself, still move.
 */
export const poolIsBusy = (pool: pg.Pool): boolean => pool.waitingCount > 0;

/**
 * The figures the scrape-time gauges show, read once per scrape: every gauge of one scrape asks
 * within the same instant and shares the one read. Undefined while the pool is busy.
 */
export function databaseFigures(pool: () => pg.Pool): () => Promise<DatabaseFigures | undefined> {
  let pending: Promise<DatabaseFigures | undefined> | undefined;
  return () => {
    if (pending) return pending;
    const read = (async () => {
      if (poolIsBusy(pool())) return undefined;
      const { rows } = await pool().query<DatabaseFigures>(READ);
      return rows[0];
    })();
    pending = read;
    // Shared by the gauges of this scrape only: the next scrape reads again.
    void read.finally(() => setTimeout(() => (pending = undefined), 100).unref()).catch(() => {});
    return read;
  };
}
