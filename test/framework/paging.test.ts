import { describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { useTestApp } from '../helpers/use-test-app.ts';
import type { TxContext } from '../../framework/context/tx.ts';
import { KeysetPager, TOTAL_CAP, type ListFilter } from '../../framework/operations/paging.ts';
import type { Cursor, CursorScope } from '../../framework/operations/cursor.ts';
import { ProblemError } from '../../framework/errors.ts';

const t = useTestApp();

/** Runs fn over a scratch table of the transaction: 9 rows, v in 1..3 or null, k the tenant-like filter key. */
async function withScratch<T>(fn: (ctx: TxContext) => Promise<T>): Promise<T> {
  return t.app.services.transactions.run(t.app.operator, async (ctx) => {
    const run = (text: string) => ctx.db.executeQuery(CompiledQuery.raw(text));
    await run(
      `create temp table scratch (id uuid primary key default gen_random_uuid(), v integer, k text not null) on commit drop`,
    );
    await run(
      `insert into scratch (v, k) select case when i % 4 = 0 then null else i % 3 + 1 end, case when i % 2 = 0 then 'even' else 'odd' end from generate_series(1, 9) as i`,
    );
    return fn(ctx);
  });
}

const pager = () =>
  new KeysetPager({
    select: 'id, v',
    from: 'scratch',
    id: 'id',
    where: [],
    sorts: { id: { column: 'id' }, v: { column: 'v', nullable: true } },
  });

const NO_FILTER: ListFilter = { conditions: [], params: [] };

/** Where the operator's pages of `p` (no filter) seal their cursors. */
const scopeOf = (p: KeysetPager, sort = 'id'): CursorScope =>
  p.statement({ limit: 1, offset: 0, sort }, NO_FILTER, {
    tenantId: t.app.operator.id,
    cursors: t.app.services.cursors,
  }).walk.scope;

/** The cursor a page's next carries, opened as the list opens it. */
const opened = (p: KeysetPager, next: string, sort = 'id'): Cursor =>
  t.app.services.cursors.open(next, scopeOf(p, sort), sort);

async function follow(
  ctx: TxContext,
  p: KeysetPager,
  sort: string,
  filter?: { conditions: string[]; params: unknown[] },
): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  for (let i = 0; i < 20; i++) {
    const page = await p.page(ctx, { limit: 2, offset: 0, sort, ...(after ? { after } : {}) }, filter);
    ids.push(...page.items.map((r) => String(r.id)));
    if (!page.next) return ids;
    after = page.next;
  }
  throw new Error('next never became null');
}

const expected = async (ctx: TxContext, order: string, where = 'true') =>
  (
    await ctx.db.executeQuery<{ id: string }>(
      CompiledQuery.raw(`select id from scratch where ${where} order by ${order}`),
    )
  ).rows.map((r) => r.id);

describe('KeysetPager', () => {
  it('walks a column holding nulls in both directions: nulls last ascending and descending, each row once', async () => {
    await withScratch(async (ctx) => {
      const p = pager();
      expect(await follow(ctx, p, 'v')).toEqual(await expected(ctx, 'v asc nulls last, id asc'));
      expect(await follow(ctx, p, '-v')).toEqual(await expected(ctx, 'v desc nulls last, id desc'));
    });
  });

  it('walks several sort keys in mixed directions, nulls last on each, ties broken by id in the last key’s direction', async () => {
    await withScratch(async (ctx) => {
      const p = new KeysetPager({
        select: 'id, v, k',
        from: 'scratch',
        id: 'id',
        where: [],
        sorts: { id: { column: 'id' }, v: { column: 'v', nullable: true }, k: { column: 'k' } },
      });
      expect(await follow(ctx, p, 'k,-v')).toEqual(await expected(ctx, 'k asc, v desc nulls last, id desc'));
      expect(await follow(ctx, p, '-v,k')).toEqual(await expected(ctx, 'v desc nulls last, k asc, id asc'));
      expect(await follow(ctx, p, 'v,k')).toEqual(await expected(ctx, 'v asc nulls last, k asc, id asc'));
      expect(await follow(ctx, p, '-k,-v')).toEqual(await expected(ctx, 'k desc, v desc nulls last, id desc'));
    });
  });

  it('refuses a sort key the list does not take, or one named twice, with 422 naming the keys it takes', async () => {
    await withScratch(async (ctx) => {
      const p = pager();
      for (const sort of ['w', 'v,-v', 'v,']) {
        const refusal = await p.page(ctx, { limit: 2, offset: 0, sort }).catch((err: unknown) => err);
        expect(refusal, sort).toBeInstanceOf(ProblemError);
        expect((refusal as ProblemError).errors?.[0]?.pointer).toBe('/querystring/sort');
      }
      const unknown = await p.page(ctx, { limit: 2, offset: 0, sort: 'w' }).catch((err: ProblemError) => err);
      expect((unknown as ProblemError).message).toMatch(/sort takes id, v/);
    });
  });

  it('narrows the page and its count by a filter with parameters of its own', async () => {
    await withScratch(async (ctx) => {
      const p = pager();
      const filter = { conditions: ['k = $1'], params: ['even'] };
      expect(await follow(ctx, p, '-v', filter)).toEqual(
        await expected(ctx, 'v desc nulls last, id desc', `k = 'even'`),
      );
      const first = await p.page(ctx, { limit: 1, offset: 0, sort: 'id' }, filter);
      expect(first).toMatchObject({ total: 4, totalExact: true, limit: 1, offset: 0 });
      const past = await p.page(ctx, { limit: 1, offset: 50, sort: 'id' }, filter);
      expect(past).toEqual({ items: [], total: 4, totalExact: true, limit: 1, offset: 50, next: null });
    });
  });

  it('counts up to the cap and says when it stopped', async () => {
    await t.app.services.transactions.run(t.app.operator, async (ctx) => {
      await ctx.db.executeQuery(
        CompiledQuery.raw(`create temp table big (id uuid primary key default gen_random_uuid()) on commit drop`),
      );
      await ctx.db.executeQuery(
        CompiledQuery.raw(`insert into big select gen_random_uuid() from generate_series(1, ${TOTAL_CAP + 5})`),
      );
      const p = new KeysetPager({ select: 'id', from: 'big', id: 'id', where: [], sorts: { id: { column: 'id' } } });
      expect(await p.page(ctx, { limit: 1, offset: 0, sort: 'id' })).toMatchObject({
        total: TOTAL_CAP,
        totalExact: false,
      });
      await ctx.db.executeQuery(CompiledQuery.raw(`delete from big where id in (select id from big limit 5)`));
      expect(await p.page(ctx, { limit: 1, offset: 0, sort: 'id' })).toMatchObject({
        total: TOTAL_CAP,
        totalExact: true,
      });
    });
  });

  it('round-trips a cursor and refuses one made for another sort, another scope or not made at all', () => {
    const seal = t.app.services.cursors;
    const scope: CursorScope = { list: 'a list', tenantId: t.app.operator.id, filters: '[[],[]]' };
    const cursor = { sort: '-v', value: null, id: '00000000-0000-4000-8000-000000000000', total: 42 };
    expect(seal.open(seal.seal(cursor, scope), scope, '-v')).toEqual(cursor);
    expect(() => seal.open(seal.seal(cursor, scope), scope, 'v')).toThrow(ProblemError);
    expect(() => seal.open(seal.seal(cursor, scope), scope, 'v')).toThrow(/given for sort=-v/);
    for (const other of [
      { list: 'another list' },
      { tenantId: crypto.randomUUID() },
      { filters: '[["k = $1"],["x"]]' },
    ])
      expect(() => seal.open(seal.seal(cursor, scope), { ...scope, ...other }, '-v')).toThrow(
        /not a cursor this list gave/,
      );
    expect(() => seal.open('bm9wZQ', scope, 'v')).toThrow(/not a cursor this list gave/);
    // An unsigned cursor, as releases before signing gave: its count would otherwise be believed.
    const unsigned = Buffer.from(JSON.stringify(['-v', null, cursor.id, 42])).toString('base64url');
    expect(() => seal.open(unsigned, scope, '-v')).toThrow(/not a cursor this list gave/);
    // A signed payload is still checked for shape, as a second line.
    for (const total of [-1, 1.5, TOTAL_CAP + 2]) {
      const odd = seal.seal({ ...cursor, total }, scope);
      expect(() => seal.open(odd, scope, '-v'), String(total)).toThrow(/not a cursor this list gave/);
    }
  });

  it('counts once per walk: the pages after the first answer the count the cursor carries, and run no count', async () => {
    await withScratch(async (ctx) => {
      const p = pager();
      const first = await p.page(ctx, { limit: 2, offset: 0, sort: 'id' });
      expect(first).toMatchObject({ total: 9, totalExact: true });
      expect(opened(p, first.next!).total).toBe(9);
      const place = { tenantId: ctx.tenant.id, cursors: t.app.services.cursors };
      const cursorPage = p.statement({ limit: 2, offset: 0, sort: 'id', after: first.next! }, NO_FILTER, place);
      expect(cursorPage.text).not.toMatch(/count\(/);
      // Rows added during the walk are not counted again: the walk keeps the total it began with.
      await ctx.db.executeQuery(
        CompiledQuery.raw(`insert into scratch (v, k) select 1, 'odd' from generate_series(1, 3)`),
      );
      const second = await p.page(ctx, { limit: 2, offset: 0, sort: 'id', after: first.next! });
      expect(second).toMatchObject({ total: 9, totalExact: true });
      expect(opened(p, second.next!).total).toBe(9);
      // A cursor of an earlier release, without a count or a signature, is refused rather than counted.
      const carried = opened(p, first.next!);
      const bare = Buffer.from(JSON.stringify([carried.sort, carried.value, carried.id])).toString('base64url');
      await expect(p.page(ctx, { limit: 2, offset: 0, sort: 'id', after: bare })).rejects.toThrow(
        /not a cursor this list gave/,
      );
      // A fresh walk counts again, and its pages carry that count on, to an empty page past the end.
      const fresh = await p.page(ctx, { limit: 2, offset: 0, sort: 'id' });
      expect(fresh.total).toBe(12);
      let after = fresh.next;
      let last = fresh;
      while (after) {
        last = await p.page(ctx, { limit: 2, offset: 0, sort: 'id', after });
        after = last.next;
      }
      expect(last.total).toBe(12);
    });
  });
});
