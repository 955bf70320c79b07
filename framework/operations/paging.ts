import { createHash } from 'node:crypto';
import { CompiledQuery } from 'kysely';
import { prepared } from '../db/statements.ts';
import { problem } from '../errors.ts';
import { cursorsOf, type TxContext } from '../context/tx.ts';
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, TOTAL_CAP, type Page, type PageQuery } from './page-query.ts';
import { badCursor, type Cursor, type CursorScope, type ListCursors } from './cursor.ts';

/**
 * Lists, generated and hand-written alike: the same query parameters (limit, offset, sort, after),
 * the same answer ({ items, total, totalExact, limit, offset, next }) and the same SQL, whose cost
 * does not grow with the table: a page is read from an index in sort order, deep pages go by
 * keyset (`after`) rather than by skipping rows, and the total is counted only up to a cap.
 * The parameters and answer are declared in page-query.ts, the cursor in cursor.ts.
 */

export * from './page-query.ts';
export * from './cursor.ts';

/**
 * Page sizes whose first and keyset pages run a statement with the size written into its text, so
 * PostgreSQL plans it once per connection. With the size as a parameter its generic plan must
 * assume a tenth of the table is read, costs more than a plan for the known size, and PostgreSQL
 * therefore plans the statement again on every call (about 0.6 ms of the list's 4). The set is
 * fixed, not every size from 1 to 100, to bound the prepared statements a connection can hold.
 */
const PLANNED_PAGE_SIZES: ReadonlySet<number> = new Set([10, PAGE_LIMIT_DEFAULT, 25, 50, PAGE_LIMIT_MAX]);

/** How a list reads its rows: all raw SQL fragments fixed at declaration, never from a request. */
export interface ListSource {
  /** The select list of an item, e.g. `"id", "name"` or `t.id, t.slug`. */
  select: string;
  /** The table, with an alias if the fragments use one: `"widgets"`, `tenants t`. */
  from: string;
  /** The row's id column, the tie-breaker of every order: unique among the listed rows. */
  id: string;
  /** The id column's type: uuid (the default), or text for a table keyed by a name. */
  idType?: 'uuid' | 'text';
  /** Conditions every listed row meets (e.g. `deleted_at is null`); they apply to the count too. */
  where: readonly string[];
  /**
   * Sort key → what it orders by (a column, or an expression over columns such as an enum's
   * declared position); nullable when it may be null. Nulls come last in both directions.
   */
  sorts: Readonly<Record<string, { column: string; nullable?: boolean }>>;
  /**
   * The sort whose order the capped count walks (default: the first sort), so it reads the first
   * rows of that sort's index rather than scanning the table until it has seen enough of them.
   */
  countBy?: string;
}

/**
 * Conditions added to a source's for one call (a row filter such as "the caller's own"): SQL text
 * with $1, $2... numbering its own params; the pager numbers its parameters after them.
 */
export interface ListFilter {
  conditions: readonly string[];
  params: readonly unknown[];
  /**
   * A condition on no row (the caller's permission, `permissionPredicate`): the page requires it
   * in its WHERE, and the total is counted only when it holds, around the count rather than on
   * each counted row, where it cost a pass-through of up to 10,001 rows (about 0.4 ms a list).
   */
  guard?: string;
  /**
   * Select-list expressions beside the row's, their text fixed at boot (an expanded reference
   * read in the same statement, framework/query/compile.ts): no parameters.
   */
  columns?: readonly string[];
  /**
   * The item's select list for this call, in place of the source's: the columns a query's `fields=`
   * keeps (text from the declaration's column names, never the request's). Its texts are kept as
   * the varying filters' are, up to the same bound.
   */
  select?: string;
  /**
   * The conditions' text varies with the request (a query's filters): such texts are kept, and
   * run prepared, only up to a bound per list; past it they are built on each call and run unnamed.
   */
  varies?: boolean;
  /**
   * What a cursor given under this filter is bound to, when the conditions and values are not the
   * right words for it: a query's filters as the request wrote them (`deadline=lt.now` is the same
   * filter on every page of a walk, though `now` is a new value on each).
   */
  binding?: string;
}

const NO_FILTER: ListFilter = { conditions: [], params: [] };

/** Statement texts a list keeps for filters that vary with the request (ListFilter.varies). */
export const QUERY_SHAPES_PER_LIST = 32;

/** Sorts a list keeps read: the single keys are few; several keys combine into many. */
const ORDERS_KEPT = 256;

/** One key of an order: what it sorts by, whether it may be null, and its direction. */
interface OrderKey {
  expr: string;
  nullable: boolean;
  descending: boolean;
}

/** Where a page starts, per key of the order: after a value ('v') or within the null rows ('n'); '' on a first page. */
type CursorShape = string;

/** Where a list is read: the tenant, and the installation's cursor seal (a cursor is good only there). */
export interface ListPlace {
  tenantId: string;
  cursors: ListCursors;
}

/**
 * One page's place in its walk: the cursor it resumed from (none on a first page) and what its
 * `next` is sealed for. KeysetPager.statement makes it; answer and failure take it back.
 */
export interface Walk {
  cursor?: Cursor;
  scope: CursorScope;
  cursors: ListCursors;
}

/**
 * A filter as the signed text of a cursor: its binding when it has one (a query's filters as the
 * request wrote them, ListFilter.binding), else its conditions and their values. The guard and
 * the extra columns are left out: they say who may read and what is shown, not which rows, and a
 * one-exchange page carries them where the handler's page of the same list does not, so both give
 * and take the same cursors.
 */
export const filterText = (filter: ListFilter): string =>
  filter.binding ??
  (filter.conditions.length === 0 && filter.params.length === 0
    ? '[[],[]]'
    : JSON.stringify([filter.conditions, filter.params], (_key, value) =>
        typeof value === 'bigint' ? value.toString() : value,
      ));

/**
 * Reads pages of one source, in the order of one or several sort keys (`sort=priority,-deadline`).
 * Each statement text is built once per (sort, cursor shape, filter) and run as a prepared
 * statement. Raw row values come back keyed by column, with the sort value (one key's as text,
 * several keys' as an array), the id and the capped count beside them.
 */
export class KeysetPager {
  readonly source: ListSource;
  /**
   * The list, as its cursors are signed for: a digest of its declaration (table, id, fixed
   * conditions and sorts), the same in every process and across restarts, different for every
   * other list. Decided once, here.
   */
  readonly listKey: string;
  /** Texts for the declared shapes (no varying filter): a small set, each prepared. */
  private readonly texts = new Map<string, string>();
  /** Texts for filters that vary with the request, up to QUERY_SHAPES_PER_LIST. */
  private readonly queryTexts = new Map<string, string>();
  private readonly orders = new Map<string, OrderKey[]>();

  constructor(source: ListSource) {
    this.source = source;
    const { from, id, idType, where, sorts } = source;
    this.listKey = createHash('sha256')
      .update(JSON.stringify([from, id, idType ?? 'uuid', where, sorts]))
      .digest('base64url');
  }

  /**
   * The statement the page runs, and its parameters: what the list executes, for EXPLAIN too. A
   * cursor (`after`) is opened here, for this list, the place's tenant and this filter, before any
   * SQL runs: anything else is 422.
   */
  statement(
    query: PageQuery,
    filter: ListFilter,
    place: ListPlace,
  ): { text: string; params: unknown[]; cursor?: Cursor; walk: Walk } {
    const keys = this.order(query.sort);
    if (query.after !== undefined && query.offset > 0) {
      throw problem('VALIDATION_FAILED', 'offset and after do not combine: after already says where the page starts', {
        errors: [{ pointer: '/querystring/offset', message: 'must be 0 (or left out) with after' }],
      });
    }
    const scope: CursorScope = { list: this.listKey, tenantId: place.tenantId, filters: filterText(filter) };
    const cursor =
      query.after !== undefined ? place.cursors.open(query.after, scope, query.sort, this.source.idType) : undefined;
    const values = cursor ? cursorValues(cursor, keys) : undefined;
    const shape: CursorShape = values ? values.map((v) => (v === null ? 'n' : 'v')).join('') : '';
    // A cursor carries the walk's count, which spares its page the count.
    const counts = cursor === undefined;
    // One row more than the page: its presence is what says there is a next page.
    const rows = query.offset === 0 && PLANNED_PAGE_SIZES.has(query.limit) ? query.limit + 1 : undefined;
    const cacheKey = `${query.sort}\u0000${shape}\u0000${rows ?? '$'}\u0000${counts ? 'count' : ''}\u0000${filter.guard ?? ''}\u0000${(filter.columns ?? []).join('\u0000')}\u0000${filter.conditions.join('\u0000')}\u0000${filter.select ?? ''}`;
    const varies = filter.varies === true || filter.select !== undefined || keys.length > 1;
    const text = this.text(cacheKey, varies, () => this.build(keys, shape, filter, rows, counts));
    const params = [...filter.params];
    for (const value of values ?? []) if (value !== null) params.push(value);
    if (cursor) params.push(cursor.id);
    if (rows === undefined) params.push(query.limit + 1, query.offset);
    const walk: Walk = { scope, cursors: place.cursors, ...(cursor ? { cursor } : {}) };
    return { text, params, walk, ...(cursor ? { cursor } : {}) };
  }

  /** The capped count on its own (for a page that came back empty): what `total` costs. */
  countStatement(filter: ListFilter = NO_FILTER): { text: string; params: unknown[] } {
    const key = `count\u0000${filter.guard ?? ''}\u0000${filter.conditions.join('\u0000')}`;
    const text = this.text(key, filter.varies === true, () => `select ${this.cappedCount(filter)} as n`);
    return { text, params: [...filter.params] };
  }

  /**
   * A statement's text: kept and prepared once built, for a declared shape always, for one that
   * varies with the request (`varies`) while the list keeps fewer than QUERY_SHAPES_PER_LIST;
   * past that, built for the call and run unnamed, so no request can make a connection hold an
   * unbounded number of prepared statements.
   */
  private text(key: string, varies: boolean, build: () => string): string {
    const kept = varies ? this.queryTexts : this.texts;
    const found = kept.get(key);
    if (found) return found;
    const text = build();
    if (varies && kept.size >= QUERY_SHAPES_PER_LIST) return text;
    kept.set(key, prepared(text));
    return text;
  }

  /** A page in the transaction's tenant: its cursors are sealed for that tenant (TxContext's tenant). */
  async page(ctx: TxContext, query: PageQuery, filter: ListFilter = NO_FILTER): Promise<Page<Record<string, unknown>>> {
    const { db } = ctx;
    const { text, params, walk } = this.statement(query, filter, { tenantId: ctx.tenant.id, cursors: cursorsOf(ctx) });
    let rows: Record<string, unknown>[];
    try {
      rows = (await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, params))).rows;
    } catch (err) {
      throw this.failure(err, walk);
    }
    return this.answer(rows, query, walk, async () => {
      const count = this.countStatement(filter);
      return Number((await db.executeQuery<{ n: string }>(CompiledQuery.raw(count.text, count.params))).rows[0]!.n);
    });
  }

  /**
   * A batch of an export as one text (framework/bulk/list-export/sql-lines.ts): up to `size` rows
   * of the list in the order `sort` names, after the cursor `after` (none for the first batch),
   * each written by `line` (an SQL expression over the source's columns), joined by PostgreSQL in
   * that order; and the cursor of the batch's last row when more rows follow (null after the last
   * batch). One row comes back per batch, so a batch allocates one string however many rows it
   * holds. The rows are read by the same conditions, order and keyset as the list's pages; they
   * are joined in the order a window over the sort keys numbers them, not in whatever order the
   * subquery happens to return them. Its cursors carry no count: an export sends none. The text
   * varies with the columns asked for, so it runs unnamed, as a page past QUERY_SHAPES_PER_LIST.
   */
  async textBatch(
    ctx: TxContext,
    query: { sort: string; after?: string | undefined },
    filter: ListFilter,
    line: string,
    size: number,
  ): Promise<{ text: string; next: string | null }> {
    const keys = this.order(query.sort);
    const cursors = cursorsOf(ctx);
    const scope: CursorScope = { list: this.listKey, tenantId: ctx.tenant.id, filters: filterText(filter) };
    const cursor =
      query.after !== undefined ? cursors.open(query.after, scope, query.sort, this.source.idType) : undefined;
    const values = cursor ? cursorValues(cursor, keys) : undefined;
    const shape: CursorShape = values ? values.map((v) => (v === null ? 'n' : 'v')).join('') : '';
    const select = [`${line} as "__line"`, ...keys.map((k, i) => `${k.expr} as "__k${i}"`)].join(', ');
    // size + 1 rows: the one more says whether a batch follows.
    const rows = this.build(keys, shape, { ...filter, select }, size + 1, false);
    const direction = (d: boolean) => (d ? 'desc nulls last' : 'asc');
    const order = [
      ...keys.map((k, i) => `q."__k${i}" ${direction(k.descending)}`),
      `q."__id" ${direction(keys.at(-1)!.descending)}`,
    ];
    const text = `select string_agg(p."__line", '' order by p."__n") filter (where p."__n" <= ${size}) as "text",
       count(*) > ${size} as "more",
       max(p."__sort") filter (where p."__n" = ${size}) as "sort",
       max(p."__id"::text) filter (where p."__n" = ${size}) as "id"
  from (select q.*, row_number() over (order by ${order.join(', ')}) as "__n" from (${rows}) q) p`;
    const params = [...filter.params];
    for (const value of values ?? []) if (value !== null) params.push(value);
    if (cursor) params.push(cursor.id);
    let found: { text: string | null; more: boolean; sort: Cursor['value']; id: string | null };
    try {
      found = (await ctx.db.executeQuery<typeof found>(CompiledQuery.raw(text, params))).rows[0]!;
    } catch (err) {
      throw this.failure(err, { scope, cursors, ...(cursor ? { cursor } : {}) });
    }
    const next =
      found.more && found.id !== null
        ? cursors.seal({ sort: query.sort, value: found.sort, id: found.id, total: 0 }, scope)
        : null;
    return { text: found.text ?? '', next };
  }

  /**
   * The error a failure of the page's statement stands for. The one value from a request that
   * reaches SQL unparsed is a cursor's sort value: one PostgreSQL cannot read as the column's type
   * (class 22, data exception) was not ours.
   */
  failure(err: unknown, walk: Walk): unknown {
    if (
      walk.cursor &&
      typeof (err as { code?: unknown }).code === 'string' &&
      (err as { code: string }).code.startsWith('22')
    ) {
      return badCursor('after is not a cursor this list gave');
    }
    return err;
  }

  /**
   * The page from the rows of its statement. The total comes with them, or with the cursor, which
   * carries the walk's count; only an empty page past the first by offset cannot tell it, and then
   * `count` (the capped count, countStatement) is asked. `next` carries the count on, sealed for
   * the walk's scope.
   */
  async answer(
    rows: Record<string, unknown>[],
    query: PageQuery,
    walk: Walk,
    count: () => Promise<number>,
  ): Promise<Page<Record<string, unknown>>>;
  /** The same, each item made by `shape` from its row (which then keeps the pager's own columns). */
  async answer<T>(
    rows: Record<string, unknown>[],
    query: PageQuery,
    walk: Walk,
    count: () => Promise<number>,
    shape: (row: Record<string, unknown>) => T,
  ): Promise<Page<T>>;
  async answer<T>(
    rows: Record<string, unknown>[],
    query: PageQuery,
    walk: Walk,
    count: () => Promise<number>,
    shape?: (row: Record<string, unknown>) => T,
  ): Promise<Page<T | Record<string, unknown>>> {
    const { cursor } = walk;
    let counted: number;
    if (cursor) counted = cursor.total;
    else if (rows.length > 0) counted = Number(rows[0]!.__total);
    else if (query.offset === 0) counted = 0;
    else counted = await count();
    const more = rows.length > query.limit;
    const items = more ? rows.slice(0, query.limit) : rows;
    const last = items.at(-1);
    const next =
      more && last
        ? walk.cursors.seal(
            { sort: query.sort, value: last.__sort as Cursor['value'], id: String(last.__id), total: counted },
            walk.scope,
          )
        : null;
    const page = {
      total: Math.min(counted, TOTAL_CAP),
      totalExact: counted <= TOTAL_CAP,
      limit: query.limit,
      offset: query.offset,
      next,
    };
    // Shaped items are new objects; deleting keys would turn each row into a slow dictionary object.
    if (shape) return { items: items.map(shape), ...page };
    for (const item of items) {
      delete item.__sort;
      delete item.__id;
      delete item.__total;
    }
    return {
      items,
      total: Math.min(counted, TOTAL_CAP),
      totalExact: counted <= TOTAL_CAP,
      limit: query.limit,
      offset: query.offset,
      next,
    };
  }

  /** The sort keys a list's `sort` names; 422 for a key it does not sort by. */
  order(sort: string): OrderKey[] {
    const kept = this.orders.get(sort);
    if (kept) return kept;
    const names = sort.split(',');
    const seen = new Set<string>();
    const keys = names.map((written) => {
      const descending = written.startsWith('-');
      const name = descending ? written.slice(1) : written;
      const key = this.source.sorts[name];
      if (!key || seen.has(name)) throw sortRefusal(Object.keys(this.source.sorts), written, seen.has(name));
      seen.add(name);
      return { expr: key.column, nullable: key.nullable === true, descending };
    });
    if (this.orders.size < ORDERS_KEPT) this.orders.set(sort, keys);
    return keys;
  }

  private conditions(filter: ListFilter): string[] {
    return [...this.source.where, ...filter.conditions];
  }

  /**
   * count(*) over at most TOTAL_CAP + 1 rows: past the cap, the exact number is not worth reading.
   * Ordered like an index of the list, so those rows are the index's first ones, wherever the
   * tenant's rows lie in the table. Under a query's filters (`varies`) it is not ordered: the
   * planner then reads the matching rows from the index that serves the conditions (one an
   * entity declares on its filtered fields, `indexes`), where an order would have it walk the
   * sort's index past every row that does not match (250,000 of a million tasks for
   * status=in.(open,acknowledged)&deadline=lt.now, test/modules/task/task-list-plan.test.ts).
   */
  private cappedCount(filter: ListFilter): string {
    const where = this.conditions(filter);
    const by = this.source.sorts[this.source.countBy ?? Object.keys(this.source.sorts)[0]!]!.column;
    const order = filter.varies ? '' : ` order by ${by}, ${this.source.id}`;
    const count = `(select count(*) from (select 1 from ${this.source.from}${where.length ? ` where ${where.join(' and ')}` : ''}${order} limit ${TOTAL_CAP + 1}) capped)`;
    return filter.guard ? `(select case when ${filter.guard} then ${count} end)` : count;
  }

  /**
   * The page's statement; `rows`, when given, is its limit written as a constant, with no offset;
   * `counts`, whether it counts the total beside the rows. The order is the keys', then the id in
   * the last key's direction; nulls come last whichever the direction.
   */
  private build(
    keys: OrderKey[],
    shape: CursorShape,
    filter: ListFilter,
    rows: number | undefined,
    counts: boolean,
  ): string {
    const id = this.source.id;
    let n = filter.params.length;
    const next$ = () => `$${++n}`;
    const where = this.conditions(filter);
    if (filter.guard) where.push(filter.guard);
    const descending = keys.at(-1)!.descending;
    if (shape !== '') {
      const values = [...shape].map((kind) => (kind === 'v' ? next$() : null));
      const idParam = `${next$()}::${this.source.idType ?? 'uuid'}`;
      where.push(keyset(keys, values, id, idParam));
    }
    const limit = rows ?? `${next$()} offset ${next$()}`;
    const direction = (d: boolean) => (d ? 'desc' : 'asc');
    const order = keys.map(
      (k) => `${k.expr} ${direction(k.descending)}${k.descending && k.nullable ? ' nulls last' : ''}`,
    );
    const sortValue =
      keys.length === 1 ? `${keys[0]!.expr}::text` : `array[${keys.map((k) => `${k.expr}::text`).join(', ')}]`;
    const columns = filter.columns?.length ? `, ${filter.columns.join(', ')}` : '';
    const total = counts ? `, ${this.cappedCount(filter)} as "__total"` : '';
    return `select ${filter.select ?? this.source.select}${columns}, ${sortValue} as "__sort", ${id} as "__id"${total}
  from ${this.source.from}${where.length ? `\n where ${where.join('\n   and ')}` : ''}
 order by ${[...order, `${id} ${direction(descending)}`].join(', ')}
 limit ${limit}`;
  }
}

/**
 * The rows after a cursor in the order of `keys` (then the id): `values` holds, per key, the
 * parameter with the cursor's value, or null where the cursor is among the rows without one.
 * Nulls come last in both directions, so nothing follows a null on its key but more nulls.
 * Where every key goes one way and none may be null, one row comparison, which an index on the
 * keys and the id reads as a range; else the comparison spelt out key by key.
 */
function keyset(keys: OrderKey[], values: (string | null)[], id: string, idParam: string): string {
  const op = (k: { descending: boolean }) => (k.descending ? '<' : '>');
  const last = keys.at(-1)!;
  const uniform = keys.every((k) => k.descending === last.descending);
  if (uniform && values.every((v) => v !== null)) {
    const rowCompare = `(${[...keys.map((k) => k.expr), id].join(', ')}) ${op(last)} (${[...values, idParam].join(', ')})`;
    if (keys.every((k) => !k.nullable)) return rowCompare;
    if (keys.length === 1) return `(${rowCompare} or ${last.expr} is null)`;
  }
  const disjuncts: string[] = [];
  const equal: string[] = [];
  keys.forEach((k, i) => {
    const value = values[i];
    if (value === null || value === undefined) {
      equal.push(`${k.expr} is null`);
      return;
    }
    const after = `${k.expr} ${op(k)} ${value}`;
    disjuncts.push([...equal, k.nullable ? `(${after} or ${k.expr} is null)` : after].join(' and '));
    equal.push(`${k.expr} = ${value}`);
  });
  disjuncts.push([...equal, `${id} ${op(last)} ${idParam}`].join(' and '));
  return disjuncts.length === 1 ? `(${disjuncts[0]})` : `(${disjuncts.map((d) => `(${d})`).join(' or ')})`;
}

/** A cursor's values, one per key of the order (a single key's value as it stands); 422 for any other shape. */
function cursorValues(cursor: Cursor, keys: OrderKey[]): (string | null)[] {
  const values = keys.length === 1 ? [cursor.value] : cursor.value;
  if (
    !Array.isArray(values) ||
    values.length !== keys.length ||
    values.some((v, i) => (v === null ? !keys[i]!.nullable : typeof v !== 'string'))
  ) {
    throw badCursor('after is not a cursor this list gave');
  }
  return values as (string | null)[];
}

function sortRefusal(names: string[], written: string, repeated: boolean) {
  const message = repeated
    ? `sort names ${written.replace(/^-/, '')} twice; name each field once`
    : `sort takes ${names.join(', ')}, each also with "-" for descending, several separated by commas (sort=${names[0]},-${names.at(-1)}); "${written}" is not one of them`;
  return problem('VALIDATION_FAILED', message, { errors: [{ pointer: '/querystring/sort', message }] });
}
