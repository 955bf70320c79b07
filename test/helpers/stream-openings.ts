import pg from 'pg';

/**
 * Holds every stream opening of a test's app at its read of the tenant's last position
 * (framework/live/positions.ts, START), by keeping live_positions locked: what an opening decides
 * before that read (its query, its places among the limits) is decided, and it waits there until
 * `release`. For the races of an opening with its client leaving, a shutdown, or other openings.
 * Its own two connections to the database, none of the app's pool (which the openings hold).
 */
export interface HeldOpenings {
  /** The openings waiting now, told by their statement from a relay that may wait for the lock too. */
  waiting(): Promise<number>;
  /** Lets them go on (once). */
  release(): Promise<void>;
}

export async function holdStreamOpenings(databaseUrl: string): Promise<HeldOpenings> {
  const locker = new pg.Client({ connectionString: databaseUrl });
  const watcher = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([locker.connect(), watcher.connect()]);
  await locker.query('begin');
  await locker.query('lock table live_positions in access exclusive mode');
  let released = false;
  return {
    waiting: async () =>
      (
        await watcher.query<{ n: number }>(
          `select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
            where l.relation = 'live_positions'::regclass and not l.granted and a.query like $1`,
          ['%coalesce((select position from live_positions%'],
        )
      ).rows[0]!.n,
    release: async () => {
      if (released) return;
      released = true;
      try {
        await locker.query('commit');
      } finally {
        await Promise.all([locker.end(), watcher.end()]);
      }
    },
  };
}
