import Type from 'typebox';
import { fileURLToPath } from 'node:url';
import { CompiledQuery } from 'kysely';
import { defineEntity, defineModule, entity, type JobDefinition } from '../../framework/entity/define.ts';

/**
 * A test-only module: one entity exercising every kind of field rule, used by the framework
 * tests and as the worked example in docs/module-authoring.md.
 */
export const widget = defineEntity({
  module: 'testkit',
  name: 'widget',
  fields: {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    size: Type.Integer({ minimum: 0, maximum: 1000 }),
    note: Type.Optional(Type.String({ maxLength: 500 })),
    color: Type.String({ minLength: 1, maxLength: 30 }),
    approved: Type.Boolean(),
    approvedAt: Type.Optional(Type.String({ format: 'date-time' })),
  },
  immutable: ['color'],
  commandOwned: { approved: 'approve', approvedAt: 'approve' },
  permissions: { read: 'widget:read', write: 'widget:write' },
  sortable: ['name', 'size'],
  commands: {
    approve: {
      summary: 'Approve a widget',
      body: Type.Object({ comment: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: false }),
      publishes: ['testkit.widget.approved'],
      async run(ctx, row) {
        if (row.approved) return;
        ctx.publish('testkit.widget.approved', { id: row.id });
        return { approved: true, approvedAt: ctx.now.toISOString() };
      },
    },
  },
  admin: { title: 'name', columns: ['name', 'size', 'color', 'approved'] },
});

/** Steers the test kit's job from a test: the tenants (by id) whose run fails, and every attempt made. */
export const tallyControl = { failFor: new Set<string>(), attempts: [] as { tenantId: string; slot: string; openTransactions: number }[] };

/**
 * A per-tenant job shaped like billing's renewal: a transaction, work with no transaction open,
 * another transaction. Each run records a widget named after its slot, once however often it runs.
 */
export const tallyJob: JobDefinition = {
  name: 'testkit-tally',
  cron: '0 3 * * *',
  perTenant: true,
  retryLimit: 1,
  retryDelay: 1,
  async run(ctx) {
    const tenant = ctx.tenant!;
    const before = await ctx.transaction(async (tx) => {
      const { rows } = await tx.db.executeQuery<{ n: number }>(CompiledQuery.raw(`select count(*)::int as n from widgets where color = 'tally'`));
      return rows[0]!.n;
    });
    // The stand-in for a provider call: nothing of the run's may be open meanwhile.
    const { rows } = await ctx.services.db.pool.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
    );
    tallyControl.attempts.push({ tenantId: tenant.id, slot: ctx.slot, openTransactions: rows[0]!.n });
    if (tallyControl.failFor.has(tenant.id)) throw new Error(`testkit-tally refuses tenant ${tenant.slug}`);
    const created = await ctx.transaction(async (tx) => {
      const inserted = await tx.db.executeQuery(
        CompiledQuery.raw(
          `insert into widgets (name, size, color) values ($1, $2, 'tally') on conflict (tenant_id, name) where deleted_at is null do nothing`,
          [`tally ${ctx.slot}`, before],
        ),
      );
      return Number(inserted.numAffectedRows ?? 0) === 1;
    });
    return { widgetsBefore: before, created };
  },
};

export const testkitModule = defineModule({
  name: 'testkit',
  permissions: [
    { name: 'widget:read', description: 'Read widgets' },
    { name: 'widget:write', description: 'Write widgets' },
    { name: 'widget:operate', description: 'An operator-only permission for tests', operator: true },
  ],
  events: ['testkit.widget.approved'],
  entities: [entity(widget)],
  jobs: [tallyJob],
  migrations: fileURLToPath(new URL('../fixtures/migrations/testkit', import.meta.url)),
});
