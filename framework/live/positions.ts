import type pg from 'pg';
import type { TxContext } from '../contracts/transaction.ts';
import { prepared, preparedQuery } from '../db/statements.ts';
import { run } from '../operations/entity-sql.ts';

/**
 * Positions: each event a stream can show gets, when the relay moves it on, a number that only
 * grows within its tenant (migrations/framework/0015_live_positions.sql). The relay hands them out
 * under one lock, so the positions of a tenant are in the order of the relays' commits, and the
 * events of one row (whose transactions commit one after another, holding the row) in the order
 * of their commits. A stream's `id:` is the position; a client resumes after it, on any process.
 */

/** The channel the relay notifies once positions commit; the payload lists the tenants (comma-separated ids). */
export const LIVE_CHANNEL = 'tenantry_live';

/** One relay at a time hands out positions (and claims): held to the relay's commit. */
export const POSITIONS_LOCK = `select pg_advisory_xact_lock(hashtextextended('tenantry.live_positions', 0))`;

// Adds each tenant's count to its last position and answers the new last: the batch's rows of the
// tenant, in id order, take the positions up to it.
const TAKE_POSITIONS = `
insert into live_positions as p (tenant_id, position)
select u.tenant_id, u.n from unnest($1::uuid[], $2::bigint[]) as u(tenant_id, n)
on conflict (tenant_id) do update set position = p.position + excluded.position
returning tenant_id, position`;

/** A NOTIFY payload is at most 8000 bytes: tenant ids (36 characters and a comma) go in chunks. */
const TENANTS_PER_NOTIFY = 200;

/**
 * The positions of the claimed rows a stream shows (the others: null), in the rows' order, taken
 * in the relay's transaction after POSITIONS_LOCK.
 */
export async function takePositions(
  client: pg.PoolClient,
  rows: readonly { tenant_id: string }[],
  shown: (row: number) => boolean,
): Promise<(number | null)[]> {
  const counts = new Map<string, number>();
  rows.forEach((row, i) => {
    if (shown(i)) counts.set(row.tenant_id, (counts.get(row.tenant_id) ?? 0) + 1);
  });
  if (counts.size === 0) return rows.map(() => null);
  const { rows: tops } = await client.query<{ tenant_id: string; position: number }>(
    preparedQuery(TAKE_POSITIONS, [[...counts.keys()], [...counts.values()]]),
  );
  const next = new Map(tops.map((t) => [t.tenant_id, Number(t.position) - counts.get(t.tenant_id)! + 1]));
  return rows.map((row, i) => {
    if (!shown(i)) return null;
    const position = next.get(row.tenant_id)!;
    next.set(row.tenant_id, position + 1);
    return position;
  });
}

/** The NOTIFYs telling every web process which tenants have new events (delivered on the relay's commit). */
export function liveNotifications(tenantIds: readonly string[]): pg.QueryConfig[] {
  const statements: pg.QueryConfig[] = [];
  for (let i = 0; i < tenantIds.length; i += TENANTS_PER_NOTIFY)
    statements.push({
      text: `select pg_notify('${LIVE_CHANNEL}', $1)`,
      values: [tenantIds.slice(i, i + TENANTS_PER_NOTIFY).join(',')],
    });
  return statements;
}

// The tenant's last position, and when the event after the one asked for was relayed (none: it is
// not kept, or there is none yet). Both read as the restricted role: row-level security holds
// them to the transaction's tenant.
const START = prepared(`
select coalesce((select position from live_positions where tenant_id = app_tenant_id()), 0) as current,
       (select relayed_at from outbox where tenant_id = app_tenant_id() and position = $1::bigint + 1) as next_relayed_at`);

/** Where a new stream starts, and whether it begins with `reset` (its Last-Event-ID is not replayable). */
export interface Start {
  position: number;
  reset: boolean;
  /** The tenant's last position now: where a stream that asked for no replay starts. */
  current: number;
}

/**
 * A stream without Last-Event-ID starts now. With one, it starts after that position when every
 * later event is still kept and was relayed within the replay window; otherwise (older, purged,
 * or a position this tenant never gave) it starts now, with one `reset` event.
 */
export async function startPosition(
  tx: TxContext,
  lastEventId: number | undefined,
  replayMinutes: number,
): Promise<Start> {
  const [row] = await run<{ current: number; next_relayed_at: Date | null }>(tx.db, START, [lastEventId ?? 0]);
  const current = Number(row!.current);
  if (lastEventId === undefined || lastEventId === current) return { position: current, reset: false, current };
  const windowStart = tx.now.getTime() - replayMinutes * 60_000;
  const next = row!.next_relayed_at;
  if (lastEventId < current && next !== null && next.getTime() >= windowStart)
    return { position: lastEventId, reset: false, current };
  return { position: current, reset: true, current };
}
