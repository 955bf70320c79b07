import './tasks-table.ts';
import type { JobDefinition, TxContext } from '../../framework/entity/define.ts';

/** Rows marked per transaction (the spec's sweep batch). */
export const SWEEP_BATCH = 1000;

/**
 * Marks up to a batch of the tenant's live tasks whose deadline passed at `now` and that are not
 * resolved, closed or already marked, publishing task.sla_breached for each. The rows are locked
 * and the condition on sla_breached is checked again once a lock is granted, so two sweeps (or a
 * sweep and a request holding the row) mark and publish each task once.
 */
export async function markBreaches(ctx: TxContext, now: Date): Promise<string[]> {
  const rows = await ctx.db
    .updateTable('tasks')
    .set({ sla_breached: true, updated_at: now })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('tasks')
        .select('id')
        .where('deleted_at', 'is', null)
        .where('sla_breached', '=', false)
        .where('status', 'not in', ['resolved', 'closed'])
        .where('deadline', '<=', now)
        .orderBy('deadline')
        .orderBy('id')
        .limit(SWEEP_BATCH)
        .forUpdate(),
    )
    .where('sla_breached', '=', false)
    .returning('id')
    .execute();
  for (const { id } of rows) {
    ctx.publish('task.sla_breached', { id });
    ctx.publish('task.task.updated', { id, changed: ['slaBreached'] });
  }
  return rows.map((r) => r.id);
}

/** Every minute, per tenant: marks the tasks whose deadline passed, as of the clock's time. */
export const slaSweep: JobDefinition = {
  name: 'task-sla-sweep',
  cron: '* * * * *',
  perTenant: true,
  publishes: ['task.sla_breached', 'task.task.updated'],
  async run(ctx) {
    let marked = 0;
    for (;;) {
      const batch = await ctx.transaction((tx) => markBreaches(tx, ctx.now));
      marked += batch.length;
      if (batch.length < SWEEP_BATCH) return { marked, at: ctx.now.toISOString() };
    }
  },
};
