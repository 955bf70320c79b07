import Type from 'typebox';
import { fileURLToPath } from 'node:url';
import { defineEntity, defineModule, entity } from '../../framework/entity/define.ts';

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
        return { approved: true, approvedAt: new Date().toISOString() };
      },
    },
  },
  admin: { title: 'name', columns: ['name', 'size', 'color', 'approved'] },
});

export const testkitModule = defineModule({
  name: 'testkit',
  permissions: [
    { name: 'widget:read', description: 'Read widgets' },
    { name: 'widget:write', description: 'Write widgets' },
    { name: 'widget:operate', description: 'An operator-only permission for tests', operator: true },
  ],
  events: ['testkit.widget.approved'],
  entities: [entity(widget)],
  migrations: fileURLToPath(new URL('../fixtures/migrations/testkit', import.meta.url)),
});
