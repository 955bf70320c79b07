import { describe, expectTypeOf, it } from 'vitest';
import Type from 'typebox';
import { defineCommand, defineEntity, defineRoute, type EntityRow } from '../../framework/entity/define.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import type { TxContext } from '../../framework/context/tx.ts';

// Each `@ts-expect-error` below is a compile error the type check expects: if a change let the
// mistake through, the directive would be unused and `vitest --typecheck` / `tsc` would fail.

const fields = {
  title: Type.String({ minLength: 1 }),
  status: Type.Union([Type.Literal('open'), Type.Literal('done')]),
  dueAt: DateTime(),
  doneAt: Type.Optional(DateTime()),
  note: Type.Optional(Type.String()),
};
const command = defineCommand(fields);
const FinishBody = Type.Object(
  { comment: Type.String(), at: Type.Optional(DateTime()) },
  { additionalProperties: false },
);

describe("defineCommand: the body is its schema's type", () => {
  it('types the body of an inline run, and refuses a property the schema does not have', () => {
    defineEntity({
      module: 'm',
      name: 'task',
      fields,
      commandOwned: { status: 'finish', doneAt: 'finish' },
      permissions: { read: 'task:read', write: 'task:write' },
      commands: {
        finish: command({
          summary: 'Finish',
          body: FinishBody,
          publishes: ['m.task.finished'],
          async run(ctx, row, body) {
            expectTypeOf(body).toEqualTypeOf<{ comment: string; at?: string }>();
            expectTypeOf(body.comment).toEqualTypeOf<string>();
            // @ts-expect-error: the body has no property reason
            void body.reason;
            // @ts-expect-error: comment is a string, not a number
            const n: number = body.comment;
            void n;
            expectTypeOf(row.title).toEqualTypeOf<string>();
            ctx.publish('m.task.finished', { id: row.id });
            return { status: 'done', doneAt: body.at ?? new Date() };
          },
        }),
      },
    });
  });

  it('refuses changes the fields cannot hold', () => {
    command({
      summary: 'Reopen',
      // @ts-expect-error: status is 'open' or 'done'
      async run() {
        return { status: 'reopened' };
      },
    });
  });
});

describe('ctx.publish accepts only the declared publishes', () => {
  it('refuses, at compile time, an event a command does not list', () => {
    command({
      summary: 'Finish',
      publishes: ['m.task.finished'],
      async run(ctx) {
        ctx.publish('m.task.finished');
        // @ts-expect-error: not in this command's publishes
        ctx.publish('m.task.deleted');
      },
    });
  });

  it('lets a command that lists nothing publish nothing', () => {
    command({
      summary: 'Touch',
      async run(ctx) {
        expectTypeOf(ctx).toEqualTypeOf<TxContext<never>>();
        // @ts-expect-error: the command declares no publishes
        ctx.publish('m.task.finished');
      },
    });
  });

  it('refuses, at compile time, an event a route does not list', () => {
    defineRoute({
      method: 'POST',
      url: '/api/v1/m/tasks/close-all',
      operationId: 'm-task-close-all',
      summary: 'Close all',
      access: { permission: 'task:write' },
      publishes: ['m.task.closed'],
      schema: { response: { 204: Type.Null() } },
      handler: async ({ tx }) => {
        tx.publish('m.task.closed');
        // @ts-expect-error: not in this route's publishes
        tx.publish('m.task.opened');
        return null;
      },
    });
  });

  it('still passes a narrowed context to helpers that take any TxContext', () => {
    const helper = (ctx: TxContext) => ctx.tenant.id;
    command({
      summary: 'Help',
      async run(ctx) {
        helper(ctx);
      },
    });
  });
});

describe('rows hold what PostgreSQL returns', () => {
  type Row = EntityRow<typeof fields>;
  it('types a date-time field as a Date, and an empty optional field as null', () => {
    expectTypeOf<Row['dueAt']>().toEqualTypeOf<Date>();
    expectTypeOf<Row['doneAt']>().toEqualTypeOf<Date | null>();
    expectTypeOf<Row['note']>().toEqualTypeOf<string | null>();
    expectTypeOf<Row['createdAt']>().toEqualTypeOf<Date>();
    expectTypeOf<Row['status']>().toEqualTypeOf<'open' | 'done'>();
  });

  it('refuses reading a date-time row value as a string', () => {
    const row = {} as Row;
    // @ts-expect-error: a date-time arrives as a Date
    const due: string = row.dueAt;
    void due;
  });
});

describe('publicRead: the shape is typed by its schema', () => {
  const Page = Type.Object({ title: Type.String(), dueAt: DateTime() }, { additionalProperties: false });
  it('accepts a shape built from the row (a Date where the schema has a date-time)', () => {
    defineEntity({
      module: 'm',
      name: 'task',
      fields,
      permissions: { read: 'task:read', write: 'task:write' },
      publicRead: { by: 'title', schema: Page, shape: (row) => ({ title: row.title, dueAt: row.dueAt }) },
    });
  });

  it('refuses a shape that does not match, and a lookup field the entity does not have', () => {
    defineEntity({
      module: 'm',
      name: 'task',
      fields,
      permissions: { read: 'task:read', write: 'task:write' },
      // @ts-expect-error: the shape leaves out dueAt
      publicRead: { by: 'title', schema: Page, shape: (row) => ({ title: row.title }) },
    });
    defineEntity({
      module: 'm',
      name: 'task',
      fields,
      permissions: { read: 'task:read', write: 'task:write' },
      // @ts-expect-error: slug is not a field
      publicRead: { by: 'slug', schema: Page, shape: (row) => ({ title: row.title, dueAt: row.dueAt }) },
    });
  });
});

describe('beforeTransaction: its body is the schema’s type, its result is run’s prepared', () => {
  it('types the step’s body and hands run exactly what the step returns', () => {
    command({
      summary: 'Finish with a digest made before the transaction',
      body: FinishBody,
      async beforeTransaction(body, services) {
        expectTypeOf(body).toEqualTypeOf<{ comment: string; at?: string }>();
        // @ts-expect-error: the body has no property reason
        void body.reason;
        return { digest: await services.passwordHasher.hash(body.comment) };
      },
      async run(_ctx, _row, _body, _services, prepared) {
        expectTypeOf(prepared).toEqualTypeOf<{ digest: string }>();
        // @ts-expect-error: the step returned no property hash
        void prepared.hash;
        return { note: prepared.digest };
      },
    });
  });
});
