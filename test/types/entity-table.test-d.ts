import { describe, expectTypeOf, it } from 'vitest';
import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import Type from 'typebox';
import { DateTime } from '../../framework/entity/date-time.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import type { EntityTable, SnakeCase } from '../../framework/db/entity-table.ts';
import type { Database } from '../../framework/db/types.ts';
import '../../modules/task/tasks-table.ts';
import '../../modules/user/users-table.ts';

// Each `@ts-expect-error` below is a compile error the type check expects: if a change let the
// mistake through, the directive would be unused and `vitest --typecheck` / `tsc` would fail.

const fields = {
  title: Type.String({ minLength: 1 }),
  status: WithDefault(Type.Union([Type.Literal('open'), Type.Literal('done')]), 'open'),
  dueAt: DateTime(),
  doneAt: Type.Optional(DateTime()),
  note: Type.Optional(Type.String()),
  nickName: Type.Optional(WithDefault(Type.String(), '')),
  tags: WithDefault(Type.Array(Type.String()), []),
  size: Type.Integer(),
};

interface DB {
  chores: EntityTable<typeof fields>;
  prices: EntityTable<{ code: typeof fields.title }, { scope: 'global'; deleteMode: 'hard' }>;
}
declare const db: Kysely<DB>;

describe('EntityTable: the kysely table type derived from the field schemas', () => {
  it('names the columns in snake_case, as names.ts does', () => {
    expectTypeOf<SnakeCase<'approvedAt'>>().toEqualTypeOf<'approved_at'>();
    expectTypeOf<SnakeCase<'sha256Hex'>>().toEqualTypeOf<'sha256_hex'>();
    expectTypeOf<SnakeCase<'slaBreached'>>().toEqualTypeOf<'sla_breached'>();
    expectTypeOf<SnakeCase<'name'>>().toEqualTypeOf<'name'>();
  });

  it('types a selected row as PostgreSQL hands it back, system columns included', () => {
    expectTypeOf<Selectable<DB['chores']>>().toEqualTypeOf<{
      id: string;
      tenant_id: string;
      created_at: Date;
      updated_at: Date;
      deleted_at: Date | null;
      title: string;
      status: 'open' | 'done';
      due_at: Date;
      done_at: Date | null;
      note: string | null;
      nick_name: string;
      tags: string[];
      size: number;
    }>();
    expectTypeOf<Selectable<DB['prices']>>().toEqualTypeOf<{
      id: string;
      created_at: Date;
      updated_at: Date;
      code: string;
    }>();
  });

  it('lets an insert leave out what the database supplies, and only that', () => {
    type Insert = Insertable<DB['chores']>;
    // The required fields alone make an insert: the system columns, defaults and Optional fields may be left out.
    expectTypeOf<{ title: string; due_at: Date; size: number }>().toExtend<Insert>();
    expectTypeOf<{
      title: string;
      due_at: string;
      size: number;
      status: 'done';
      note: null;
      done_at: string;
      tags: string[];
    }>().toExtend<Insert>();
    expectTypeOf<{ due_at: Date; size: number }>().not.toExtend<Insert>();
    expectTypeOf<Insert['status']>().toEqualTypeOf<'open' | 'done' | undefined>();
    expectTypeOf<Insert['nick_name']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Updateable<DB['chores']>['status']>().toEqualTypeOf<'open' | 'done' | undefined>();
  });

  it('keeps the builder fully typed: a wrong column name or value does not compile', async () => {
    const rows = await db
      .selectFrom('chores')
      .select(['title', 'due_at', 'status'])
      .where('status', '=', 'done')
      .execute();
    expectTypeOf(rows).toEqualTypeOf<{ title: string; due_at: Date; status: 'open' | 'done' }[]>();

    // @ts-expect-error: the column is due_at, not dueAt
    await db.selectFrom('chores').select('dueAt').execute();
    // @ts-expect-error: no column titel
    await db.selectFrom('chores').where('titel', '=', 'x').execute();
    // @ts-expect-error: status admits open or done only
    await db.updateTable('chores').set({ status: 'closed' }).execute();
    // @ts-expect-error: size is a number
    await db.insertInto('chores').values({ title: 't', due_at: new Date(), size: 'big' }).execute();
    // @ts-expect-error: title is required on insert (no default)
    await db.insertInto('chores').values({ due_at: new Date(), size: 1 }).execute();
    // @ts-expect-error: a global entity's table has no tenant_id, a hard-deleted one no deleted_at
    await db.selectFrom('prices').select(['tenant_id', 'deleted_at']).execute();
  });

  it("types the modules' tables from their definitions (declaration merging into Database)", () => {
    expectTypeOf<Selectable<Database['tasks']>['status']>().toEqualTypeOf<
      'open' | 'acknowledged' | 'in_progress' | 'resolved' | 'closed'
    >();
    expectTypeOf<Selectable<Database['tasks']>['deadline']>().toEqualTypeOf<Date>();
    expectTypeOf<Insertable<Database['tasks']>['sla_breached']>().toEqualTypeOf<boolean | undefined>();
    // The password hash is no field: a column added to the derived type by hand.
    expectTypeOf<Selectable<Database['users']>['password_hash']>().toEqualTypeOf<string | null>();
    expectTypeOf<Selectable<Database['users']>['roles']>().toEqualTypeOf<string[]>();
    // @ts-expect-error: users has no column passwordHash
    expectTypeOf<Selectable<Database['users']>['passwordHash']>();
  });
});
