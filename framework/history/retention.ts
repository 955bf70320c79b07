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
 * ago are deleted, oldest first, a batch per transaction until a batch comes back short. Each
 * batch reads the primary key (tenant, id) in order from its start: what is due sits there.
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
    for (;;) {
      const batch = await ctx.transaction(async (tx) => {
        const result = await tx.db
          .deleteFrom('revisions')
          // DELETE takes no LIMIT: the batch is picked by a subquery on the key (the tenant by row security).
          .where('id', 'in', (eb) =>
            eb.selectFrom('revisions').select('id').where('id', '<', below).orderBy('id').limit(RETENTION_BATCH),
          )
          .executeTakeFirstOrThrow();
        return Number(result.numDeletedRows);
      });
      deleted += batch;
      if (batch < RETENTION_BATCH) return { deleted, before: before.toISOString() };
    }
  },
};
