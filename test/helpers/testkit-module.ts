import Type from 'typebox';
import { sql } from 'kysely';
import { fileURLToPath } from 'node:url';
import { defineEntity, defineModule, entity, type CommandDefinition } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';

/**
 * A test-only module, used by the framework tests and as the worked examples in
 * docs/module-authoring.md: widget exercises every kind of field rule; gadget is global, setting a
 * singleton, memo has row access, hard delete and the lifecycle hooks.
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

/**
 * Global: one price list every tenant reads, which only the operator writes. A gadget a setting
 * of any tenant still uses cannot be deleted: the check reads across tenants through a
 * security-definer function (test/fixtures/migrations/testkit/0002_gadgets_settings_memos.sql).
 */
export const gadget = defineEntity({
  module: 'testkit',
  name: 'gadget',
  description: 'A global price list entry: every tenant reads it, the operator writes it.',
  scope: 'global',
  fields: {
    code: Type.String({ minLength: 1, maxLength: 40 }),
    name: Type.String({ minLength: 1, maxLength: 100 }),
    price: Type.Integer({ minimum: 0 }),
  },
  permissions: { read: 'widget:read', write: 'widget:operate' },
  sortable: ['code', 'price'],
  hooks: {
    async beforeDelete(ctx, { row }) {
      const { rows } = await sql<{ used: boolean }>`select testkit_gadget_in_use(${row.id}) as used`.execute(ctx.db);
      if (rows[0]?.used) throw problem('INVALID_STATE', `gadget ${row.code} is still chosen by a tenant's setting`);
    },
  },
});

const settingFields = {
  theme: Type.String({ minLength: 1, maxLength: 30 }),
  gadgetId: Type.Optional(Type.String({ format: 'uuid' })),
  activations: Type.Integer({ minimum: 0 }),
  activatedAt: Type.Optional(Type.String({ format: 'date-time' })),
};

const ActivateBody = Type.Object({ theme: Type.Optional(Type.String({ minLength: 1, maxLength: 30 })) }, { additionalProperties: false });

/** A singleton's command receives null until the row exists, and then returns the new row's values. */
const activate: CommandDefinition<typeof settingFields, typeof ActivateBody, true> = {
  summary: 'Activate the setting, creating it on the first call',
  body: ActivateBody,
  publishes: ['testkit.setting.activated'],
  async run(ctx, row, body) {
    const activatedAt = new Date().toISOString();
    ctx.publish('testkit.setting.activated', { first: row === null });
    if (row === null) return { theme: body.theme ?? 'light', activations: 1, activatedAt };
    return { activations: row.activations + 1, activatedAt, ...(body.theme ? { theme: body.theme } : {}) };
  },
};

/**
 * Singleton: one per tenant at /api/v1/testkit/setting. GET answers 404 until the activate command
 * creates it; PATCH and DELETE are declared, PUT is not.
 */
export const setting = defineEntity({
  module: 'testkit',
  name: 'setting',
  description: 'The tenant\'s one setting, created by its first activation.',
  singleton: true,
  singletonRoutes: ['update', 'delete'],
  fields: settingFields,
  commandOwned: { activations: 'activate', activatedAt: 'activate' },
  permissions: { read: 'widget:read', write: 'widget:write' },
  commands: { activate },
});

/**
 * Row access, hard delete and the hooks: a memo is its owner's alone (anyone else's id answers
 * 404), DELETE removes it, afterWrite marks a long memo (a read-only field) through the framework's
 * write, and afterRead adds an excerpt to every answer.
 */
export const memo = defineEntity({
  module: 'testkit',
  name: 'memo',
  description: 'A note only its owner sees.',
  fields: {
    ownerId: Type.String({ format: 'uuid' }),
    text: Type.String({ minLength: 1, maxLength: 2000 }),
    pinned: Type.Boolean(),
    long: Type.Boolean({ description: 'Longer than 100 characters; kept by the service.' }),
  },
  immutable: ['ownerId'],
  commandOwned: { pinned: 'pin' },
  readOnly: ['long'],
  computed: { excerpt: Type.String({ maxLength: 21, description: 'The first 20 characters, and … when there are more.' }) },
  rowAccess: (ctx) => ({ ownerId: ctx.actorId }),
  deleteMode: 'hard',
  permissions: { read: 'widget:read', write: 'widget:write' },
  commands: {
    pin: {
      summary: 'Pin a memo',
      publishes: ['testkit.memo.pinned'],
      async run(ctx, row) {
        if (row.pinned) return;
        ctx.publish('testkit.memo.pinned', { id: row.id });
        return { pinned: true };
      },
    },
  },
  hooks: {
    async afterWrite(_ctx, { op, row }) {
      if (op === 'delete') return;
      const long = row.text.length > 100;
      if (long !== row.long) return { long };
    },
    afterRead: (_ctx, row) => ({ ...row, excerpt: row.text.length > 20 ? `${row.text.slice(0, 20)}…` : row.text }),
  },
  sortable: ['text'],
});

export const testkitModule = defineModule({
  name: 'testkit',
  permissions: [
    { name: 'widget:read', description: 'Read widgets' },
    { name: 'widget:write', description: 'Write widgets' },
    { name: 'widget:operate', description: 'An operator-only permission for tests', operator: true },
  ],
  events: ['testkit.widget.approved', 'testkit.setting.activated', 'testkit.memo.pinned'],
  entities: [entity(widget), entity(gadget), entity(setting), entity(memo)],
  migrations: fileURLToPath(new URL('../fixtures/migrations/testkit', import.meta.url)),
});
