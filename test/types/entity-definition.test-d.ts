import { describe, expectTypeOf, it } from 'vitest';
import Type from 'typebox';
import { defineEntity, type EntityDefinition, type EntityRow } from '../../framework/entity/define.ts';
import { DateTime } from '../../framework/entity/date-time.ts';

// Each refusal below is a compile error the `@ts-expect-error` line expects: if a change to
// defineEntity let the mistake through, the directive would be unused and the type check fails.

const fields = {
  title: Type.String({ minLength: 1 }),
  done: Type.Boolean(),
  doneAt: Type.Optional(DateTime()),
};
const permissions = { read: 'thing:read', write: 'thing:write' };
const finish = {
  summary: 'Finish',
  async run() {
    return { done: true };
  },
};

describe('defineEntity', () => {
  it('accepts a definition naming only its own fields and commands', () => {
    const ok = defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      immutable: ['title'],
      commandOwned: { done: 'finish', doneAt: 'finish' },
      sortable: ['title', 'doneAt'],
      permissions,
      commands: { finish },
      admin: { title: 'title', columns: ['title', 'done'] },
    });
    expectTypeOf(ok).toEqualTypeOf<EntityDefinition<typeof fields, 'finish'>>();
  });

  it('refuses an unknown field in immutable', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      // @ts-expect-error: colour is not a field
      immutable: ['colour'],
      permissions,
    });
  });

  it('refuses an unknown field in commandOwned', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      // @ts-expect-error: finishedBy is not a field
      commandOwned: { finishedBy: 'finish' },
      permissions,
      commands: { finish },
    });
  });

  it('refuses a command-owned field naming an undeclared command', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      // @ts-expect-error: there is no command complete
      commandOwned: { done: 'complete' },
      permissions,
      commands: { finish },
    });
  });

  it('accepts a field written by several commands, and refuses one of them being undeclared', () => {
    const reopen = {
      summary: 'Reopen',
      async run() {
        return { done: false };
      },
    };
    const ok = defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      commandOwned: { done: ['finish', 'reopen'], doneAt: 'finish' },
      permissions,
      commands: { finish, reopen },
    });
    expectTypeOf(ok).toEqualTypeOf<EntityDefinition<typeof fields, 'finish' | 'reopen'>>();
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      // @ts-expect-error: there is no command complete
      commandOwned: { done: ['finish', 'complete'] },
      permissions,
      commands: { finish },
    });
  });

  it('refuses a command-owned field when the entity declares no commands', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      // @ts-expect-error: no command at all
      commandOwned: { done: 'finish' },
      permissions,
    });
  });

  it('refuses an unknown field in sortable', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      // @ts-expect-error: priority is not a field
      sortable: ['title', 'priority'],
      permissions,
    });
  });

  it('refuses an unknown field in the admin hints', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      // @ts-expect-error: name is not a field
      admin: { title: 'name', columns: ['title'] },
    });
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      // @ts-expect-error: status is not a field
      admin: { title: 'title', columns: ['title', 'status'] },
    });
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      // @ts-expect-error: colour is not a field
      admin: { fieldText: { colour: { label: 'Colour', hint: 'The colour.' } } },
    });
  });

  it('takes each part where it belongs: the table and the delete mode in storage, the field text in admin', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      storage: { table: 'things', deleteMode: 'hard' },
      admin: { fieldText: { title: { label: 'Title', hint: 'What it is called.' } } },
    });
    // @ts-expect-error: the table is the storage part's
    defineEntity({ module: 'm', name: 'thing', fields, permissions, table: 'things' });
    // @ts-expect-error: the delete mode is the storage part's
    defineEntity({ module: 'm', name: 'thing', fields, permissions, deleteMode: 'hard' });
    // @ts-expect-error: the field text is the admin part's
    defineEntity({ module: 'm', name: 'thing', fields, permissions, fieldText: {} });
  });

  it('accepts the scope, singleton, row-access, delete-mode, read-only and computed options', () => {
    defineEntity({
      module: 'm',
      name: 'price',
      fields,
      permissions,
      scope: 'global',
      storage: { deleteMode: 'hard' },
      readOnly: ['done'],
    });
    defineEntity({
      module: 'm',
      name: 'note',
      fields: { ...fields, ownerId: Type.String() },
      permissions,
      rowAccess: (ctx) => ({ ownerId: ctx.actorId }),
      computed: { shout: Type.String() },
      hooks: { afterRead: (_ctx, row) => ({ ...row, shout: row.title.toUpperCase() }) },
    });
    defineEntity({
      module: 'm',
      name: 'profile',
      fields,
      permissions,
      singleton: true,
      singletonRoutes: ['replace', 'update', 'delete'],
    });
  });

  it("gives a singleton's command the row or null, and a collection's command the row", () => {
    defineEntity({
      module: 'm',
      name: 'profile',
      fields,
      permissions,
      singleton: true,
      commands: {
        open: {
          summary: 'Open',
          async run(_ctx, row) {
            expectTypeOf(row).toEqualTypeOf<EntityRow<typeof fields> | null>();
            return row === null ? { title: 'new', done: false } : { done: true };
          },
        },
      },
    });
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      commands: {
        open: {
          summary: 'Open',
          async run(_ctx, row) {
            expectTypeOf(row).toEqualTypeOf<EntityRow<typeof fields>>();
            return { done: !row.done };
          },
        },
      },
    });
  });

  it('tells afterWrite which command ran, by its declared name', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      commands: { finish },
      hooks: {
        async afterWrite(_ctx, input) {
          if (input.op === 'command') expectTypeOf(input.command).toEqualTypeOf<'finish'>();
          else expectTypeOf(input.command).toEqualTypeOf<undefined>();
          return { done: true };
        },
      },
    });
  });

  it('refuses singleton routes on an entity that is not a singleton, and an unknown singleton route', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      // @ts-expect-error: only a singleton declares its routes
      singletonRoutes: ['update'],
    });
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      singleton: true,
      // @ts-expect-error: patch is not a singleton route (update is)
      singletonRoutes: ['patch'],
    });
  });

  it('refuses an unknown scope, delete mode or option', () => {
    // @ts-expect-error: shared is not a scope
    defineEntity({ module: 'm', name: 'thing', fields, permissions, scope: 'shared' });
    // @ts-expect-error: purge is not a delete mode
    defineEntity({ module: 'm', name: 'thing', fields, permissions, storage: { deleteMode: 'purge' } });
    // @ts-expect-error: hardDelete is not an option (storage.deleteMode: 'hard' is)
    defineEntity({ module: 'm', name: 'thing', fields, permissions, hardDelete: true });
  });

  it('refuses a row-access filter or a read-only list naming an unknown field (the boot checks catch a stray field beside known ones)', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      // @ts-expect-error: ownerId is not a field
      rowAccess: (ctx) => ({ ownerId: ctx.actorId }),
    });
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      // @ts-expect-error: shine is not a field
      readOnly: ['shine'],
    });
  });

  it('refuses an afterRead that leaves out a computed field', () => {
    defineEntity({
      module: 'm',
      name: 'thing',
      fields,
      permissions,
      computed: { shout: Type.String() },
      // @ts-expect-error: shout is missing from what afterRead returns
      hooks: { afterRead: (_ctx, row) => ({ ...row }) },
    });
  });
});
