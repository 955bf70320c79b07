import type { JobDefinition } from '../entity/define.ts';

/** Revisions deleted per transaction: a batch, as the other sweeps take them. */
export const RETENTION_BATCH = 1000;

const DAY_MS = 24 * 60 * 60_000;

/**
 * The smallest revision id made at or after `at`: a UUIDv7 is its millisecond time first, so every
 * id below it was made earlier. Revisions are found by their key's order, with no index on time.
 */
export function firstIdAt(at: Date): string {
  const hex = Math.max(0, at.getTime()).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

/**
 * history.retention_days, applied daily in every tenant: the revisions made before that many days
 * ago are deleted, a batch per transaction until a batch comes back short. The table's one index
 * is its key (tenant, row, id) (migrations/framework/0017_revisions_one_key.sql: one index entry
 * per revision, not two), so there is no index on time: the job walks the tenant's part of the key
 * once, in key order, each batch taking up after the last row the previous one deleted, and
 * deletes what it finds made before the cut. A daily pass over the key is what each write saves
 * an index entry against.
 */
export const historyRetention: JobDefinition = {
  name: 'history-retention',
  cron: '41 3 * * *',
  perTenant: true,
  async run(ctx) {
    const days = ctx.services.config.history.retention_days;
    const before = new Date(ctx.now.getTime() - days * DAY_MS);
    const below = firstIdAt(before);
    let deleted = 0;
    let after: { rowId: string; id: string } | undefined;
    for (;;) {
      const batch = await ctx.transaction(async (tx) =>
        tx.db
          .deleteFrom('revisions')
          // DELETE takes no LIMIT: the batch is picked by a subquery on the key (the tenant by row security).
          .where(({ eb, refTuple, selectFrom }) =>
            eb(
              refTuple('row_id', 'id'),
              'in',
              selectFrom('revisions')
                .select(['row_id', 'id'])
                .where('id', '<', below)
                .$if(after !== undefined, (q) =>
                  q.where(({ eb: e, refTuple: ref, tuple }) =>
                    e(ref('row_id', 'id'), '>', tuple(after!.rowId, after!.id)),
                  ),
                )
                .orderBy('row_id')
                .orderBy('id')
                .limit(RETENTION_BATCH)
                .$asTuple('row_id', 'id'),
            ),
          )
          .returning(['row_id', 'id'])
          .execute(),
      );
      deleted += batch.length;
      if (batch.length < RETENTION_BATCH) return { deleted, before: before.toISOString() };
      // The batch's last row in key order: the next batch starts after it.
      const last = batch.reduce((a, b) => (a.row_id < b.row_id || (a.row_id === b.row_id && a.id < b.id) ? b : a));
      after = { rowId: last.row_id, id: last.id };
    }
  },
};
