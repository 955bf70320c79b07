import type { FastifyReply } from 'fastify';
import type { TObject, TSchema } from 'typebox';
import type { TxContext } from '../context/tx.ts';
import { acceptedColumn } from '../entity/table-check.ts';
import { KeysetPager, type ListFilter, type ListSource, type Page, type PageQuery } from '../operations/paging.ts';
import { pageSchema } from '../operations/page-query.ts';
import { compileFilter } from './compile.ts';
import { selectAnswer } from './expansion.ts';
import { parseListQuery, type ListQuery } from './parse.ts';
import { queryField, type QueryField, type QueryModel } from './query-model.ts';
import { listQuerySchema } from './query-schema.ts';
import type { ListExport } from '../entity/route-definition.ts';
import { exportColumns, exportRow } from '../bulk/list-export/list-columns.ts';

/**
 * A hand-written list (notifications, files, tenants, ...) that takes the same query language as
 * the generated ones, over its own fields: declared once, it gives the route its query string
 * schema (paging, sort, one filter parameter per field, or, fields) and its answer's schema, and
 * answers a request's page through the same parser, compiler and pager.
 *
 *   const files = new QueryList({
 *     label: 'files', item: FileRecord, select: FILE_COLUMNS, from: 'files',
 *     columns: { name: 'name', size: 'size', mediaType: 'media_type', createdAt: 'created_at', ... },
 *     indexed: ['createdAt', 'name', 'size'], defaultSort: 'createdAt',
 *   });
 *   schema: { querystring: files.querySchema, response: { 200: files.pageSchema } },
 *   handler: ({ tx, query, reply }) => files.answer(tx, query, reply),
 */
export interface QueryListDeclaration {
  /** What messages call the list: `files`. */
  label: string;
  /** The item's schema: an object whose properties are the list's fields. */
  item: TObject;
  /** The select list of an item, the table and the id column, as ListSource takes them. */
  select: string;
  from: string;
  id?: string;
  idType?: 'uuid' | 'text';
  /** Conditions every listed row meets (they apply to the count too). */
  where?: readonly string[];
  /**
   * Field → its column as the statement names it (`media_type`, `t.slug`), for every field a query
   * may filter or sort by; a field left out is only answered.
   */
  columns: Readonly<Record<string, string>>;
  /** The fields a query may filter (and so sort) by, when not every one in `columns`. */
  filterable?: readonly string[];
  /**
   * The schema of a field a query may filter by that is not one of the item's own properties: a
   * field inside one of them, named by its path as the answer shows it (`actor.userId`), or an
   * item's property whose filter takes narrower values than its schema says (an enum of the
   * names it can hold).
   */
  schemas?: Readonly<Record<string, TSchema>>;
  /**
   * What a sort by a field orders by, when not its column: a column whose order is the same and
   * that an index serves (a revision's time by its id, a UUIDv7 made from that time).
   */
  orders?: Readonly<Record<string, string>>;
  /** The sorts an index serves, each leading an index after tenant_id (and the list's fixed filter). */
  indexed: readonly string[];
  /** The sort when the request names none (`-createdAt`). */
  defaultSort: string;
  /** A sentence on the list's order, for its sort parameter's description. */
  sortDescription?: string;
  /** The sort the capped count walks (default: the first indexed one). */
  countBy?: string;
  /**
   * Fields whose parameter also takes a bare value, read as eq (`userId=<id>`): a parameter the list
   * took before the query language, kept for the callers who send it.
   */
  bareEq?: readonly string[];
  /**
   * A search (`q`), when the list has one: the fields its description names, and its condition,
   * SQL over the list's columns given the placeholder of q's parameter (`$3`), with the value the
   * parameter takes (default: q lower-cased, for `strpos(lower(column), $n) > 0`).
   */
  search?: {
    fields: readonly string[];
    condition(placeholder: string): string;
    value?(q: string): unknown;
  };
}

export class QueryList {
  readonly model: QueryModel;
  readonly pager: KeysetPager;
  /** The route's query string: paging, sort, a filter parameter per field, or and fields. */
  readonly querySchema: TSchema;
  /** The route's answer: a page of items. */
  readonly pageSchema: TSchema;
  private readonly search: QueryListDeclaration['search'];
  private readonly bareEq: readonly string[];
  private readonly item: TObject;
  private readonly defaultSort: string;

  constructor(declaration: QueryListDeclaration) {
    const properties = declaration.item.properties as Record<string, TSchema>;
    const fields = new Map<string, QueryField>();
    for (const name of declaration.filterable ?? Object.keys(declaration.columns)) {
      const schema = declaration.schemas?.[name] ?? properties[name];
      const column = declaration.columns[name];
      if (!schema || column === undefined) throw new Error(`list ${declaration.label}: no field ${name} to filter by`);
      const field = queryField(name, {
        schema,
        nullable: acceptedColumn(schema).nullable,
        column,
        indexed: declaration.indexed.includes(name),
      });
      const order = declaration.orders?.[name];
      if (field) fields.set(name, order === undefined ? field : { ...field, order });
    }
    const selectable = new Set(Object.keys(properties).filter((name) => name !== 'id'));
    this.model = { label: declaration.label, fields, sorts: new Map(), references: new Map(), selectable };
    const source: ListSource = {
      select: declaration.select,
      from: declaration.from,
      id: declaration.id ?? 'id',
      ...(declaration.idType ? { idType: declaration.idType } : {}),
      where: declaration.where ?? [],
      sorts: Object.fromEntries(
        [...fields.values()].map((f) => [f.name, { column: f.order, nullable: f.type.nullable }]),
      ),
      countBy: declaration.countBy ?? declaration.indexed[0]!,
    };
    this.pager = new KeysetPager(source);
    this.search = declaration.search;
    this.bareEq = declaration.bareEq ?? [];
    this.querySchema = listQuerySchema(this.model, {
      defaultSort: declaration.defaultSort,
      ...(declaration.sortDescription ? { sortDescription: declaration.sortDescription } : {}),
      ...(declaration.search ? { searches: declaration.search.fields } : {}),
      ...(declaration.bareEq ? { bareEq: declaration.bareEq } : {}),
    });
    this.pageSchema = pageSchema(declaration.item);
    this.item = declaration.item;
    this.defaultSort = declaration.defaultSort;
  }

  /**
   * The list's export (RouteDefinition.exports): every row its query matches within `scope` (as
   * for answer; `scope` may refuse the caller), read page by page with its cursor, `name` the
   * file's stem.
   */
  exports(name: string, scope?: (ctx: TxContext, query: Record<string, unknown>) => ListFilter): ListExport {
    return {
      name,
      open: (query, now) => {
        const asked = this.parse(query, now);
        const sort = typeof query.sort === 'string' ? query.sort : this.defaultSort;
        const { limit: _limit, offset: _offset, after: _after, ...filters } = query;
        return {
          columns: exportColumns(this.item, asked, new Set()),
          batch: async (ctx, after, size) => {
            const asking = { ...filters, sort, limit: size, offset: 0, ...(after !== undefined ? { after } : {}) };
            const { page } = await this.page(ctx, asking, scope?.(ctx, asking));
            return { rows: page.items.map((row) => exportRow(row, asked)), next: page.next };
          },
        };
      },
    };
  }

  /** The request's query string as a query of this list (framework/query/parse.ts); 422 for what does not fit. */
  parse(query: unknown, now: Date): ListQuery {
    const written = { ...((query ?? {}) as Record<string, unknown>) };
    for (const name of this.bareEq) {
      const values = written[name];
      if (values === undefined) continue;
      // The schema admits a bare value only where it holds no "." nor "(": never an operator.
      const read = [values].flat().map((v) => (typeof v === 'string' && !/[.(]/.test(v) ? `eq.${v}` : v));
      written[name] = Array.isArray(values) ? read : read[0];
    }
    return parseListQuery(this.model, written, now);
  }

  /**
   * The page a request's query string asks for, within `scope` (a row filter of the route's own,
   * such as the caller's rows: SQL numbering its parameters from $1), as read from the database;
   * its filters are the query's, added to the scope's.
   */
  async page(
    ctx: TxContext,
    query: Record<string, unknown>,
    scope: ListFilter = { conditions: [], params: [] },
  ): Promise<{ page: Page<Record<string, unknown>>; asked: ListQuery }> {
    const asked = this.parse(query, ctx.now);
    const conditions = [...scope.conditions];
    const params = [...scope.params];
    const q = query.q;
    if (this.search && typeof q === 'string' && q.trim() !== '') {
      params.push(this.search.value ? this.search.value(q) : q.toLowerCase());
      conditions.push(this.search.condition(`$${params.length}`));
    }
    const compiled = compileFilter(asked, params.length + 1, ctx);
    const filter: ListFilter =
      compiled.conditions.length > 0
        ? {
            ...scope,
            conditions: [...conditions, ...compiled.conditions],
            params: [...params, ...compiled.params],
            varies: true,
            binding: JSON.stringify([conditions, params, asked.written]),
          }
        : { ...scope, conditions, params };
    const page = await this.pager.page(ctx, query as unknown as PageQuery, filter);
    return { page, asked };
  }

  /** The route's answer: the page, with only the fields `fields=` names when it names some. */
  async answer(ctx: TxContext, query: unknown, reply: FastifyReply, scope?: ListFilter): Promise<unknown> {
    const { page, asked } = await this.page(ctx, query as Record<string, unknown>, scope);
    return selectAnswer(reply, page, asked);
  }
}
