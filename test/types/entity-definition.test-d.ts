import { describe, expectTypeOf, it } from 'vitest';
import Type from 'typebox';
import { defineEntity, type EntityDefinition } from '../../framework/entity/define.ts';
import { DateTime } from '../../framework/entity/date-time.ts';

// Each refusal below is a compile error the `@ts-expect-error` line expects: if a change to
// defineEntity let the mistake through, the directive would be unused and the type check fails.

const fields = {
  title: Type.String({ minLength: 1 }),
  done: Type.Boolean(),
  doneAt: Type.Optional(DateTime()),
};
const permissions = { read: 'thing:read', write: 'thing:write' };
const finish = { summary: 'Finish', async run() { return { done: true }; } };

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
  });
});
