import { CompiledQuery, type Transaction } from 'kysely';
import { deferred } from '../db/statements.ts';
import type { Database } from '../db/types.ts';
import type { Actor } from '../context/actor.ts';

/**
 * The revisions a transaction's writes made, held until its end and inserted with its COMMIT (a
 * deferred statement, like the outbox insert: no round trip of its own). Only the framework's
 * generic operations record them (framework/history/entity-history.ts); nothing here is handed to
 * module code, which never writes a revision (test/framework/history-owned-by-framework.test.ts).
 */

/** One revision as the framework records it: the changed fields' values as the API shows them. */
export interface PendingRevision {
  id: string;
  /** '<module>.<entity>' */
  entity: string;
  rowId: string;
  at: Date;
  actor: Actor;
  operation: string;
  old: Record<string, unknown>;
  new: Record<string, unknown>;
  /** The tenant whose scope recorded it: inserted while the transaction is scoped to that tenant. */
  tenantId: string;
}

/** Each transaction's revisions not yet inserted, in the order recorded. */
const pendingOf = new WeakMap<Transaction<Database>, PendingRevision[]>();

export function recordRevision(trx: Transaction<Database>, revision: PendingRevision): void {
  const pending = pendingOf.get(trx);
  if (pending) pending.push(revision);
  else pendingOf.set(trx, [revision]);
}

// One text for any number of revisions; every row's tenant is the transaction's (row-level security).
const INSERT_REVISIONS = deferred(`
insert into revisions (id, entity, row_id, at, actor_id, actor_kind, actor_name, operation, old_values, new_values)
select r.id, r.entity, r.row_id, r.at, r.actor_id, r.actor_kind, r.actor_name, r.operation, r.old_values, r.new_values
  from jsonb_to_recordset($1::jsonb) as r(id uuid, entity text, row_id uuid, at timestamptz, actor_id uuid,
                                          actor_kind text, actor_name text, operation text, old_values jsonb, new_values jsonb)`);

/**
 * Inserts the revisions the scope of this tenant recorded, as the transaction's last statements
 * (held back to leave with the COMMIT). Called where the outbox is flushed, while the transaction
 * is still scoped to the tenant.
 */
export async function flushRevisions(trx: Transaction<Database>, tenantId: string): Promise<void> {
  const pending = pendingOf.get(trx);
  if (!pending || pending.length === 0) return;
  const mine = pending.filter((r) => r.tenantId === tenantId);
  if (mine.length === 0) return;
  pendingOf.set(
    trx,
    pending.filter((r) => r.tenantId !== tenantId),
  );
  const rows = mine.map((r) => ({
    id: r.id,
    entity: r.entity,
    row_id: r.rowId,
    at: r.at.toISOString(),
    actor_id: r.actor.userId,
    actor_kind: r.actor.kind,
    actor_name: r.actor.name,
    operation: r.operation,
    old_values: r.old,
    new_values: r.new,
  }));
  await trx.executeQuery(CompiledQuery.raw(INSERT_REVISIONS, [JSON.stringify(rows)]));
}
