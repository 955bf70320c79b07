import type { TSchema } from 'typebox';
import type { ListQuery } from '../../query/parse.ts';
import { selectFields } from '../../query/expansion.ts';
import type { ListExport, TxContext } from '../../entity/define.ts';
import type { Page } from '../../operations/paging.ts';

/**
 * The columns of an export, as the list's answer holds its fields: every property of the item's
 * schema (an expansion only when the query expands it), or with `fields=` the id and the fields
 * named, in the order written, then the expansions.
 */
export function exportColumns(item: TSchema, query: ListQuery, references: ReadonlySet<string>): string[] {
  const properties = Object.keys((item as { properties?: Record<string, unknown> }).properties ?? {});
  const expanded = query.expand.map((r) => r.name);
  const own = query.select?.own;
  if (own) return ['id', ...[...own].filter((name) => name !== 'id' && !references.has(name)), ...expanded];
  return properties.filter((name) => !references.has(name) || expanded.includes(name));
}

/**
 * The export of a list whose page comes from a function of its own (the items shaped after the
 * page is read, a condition from the path): `read` answers a page for a query string, as the
 * list's route does, and the query as parsed; each batch is such a page, after the previous
 * one's `next`. `name`: the file's stem; `item`: the item's schema.
 */
export function pagedExport(
  name: string,
  item: TSchema,
  defaultSort: string,
  read: (
    ctx: TxContext,
    query: Record<string, unknown>,
    params: Readonly<Record<string, string>>,
  ) => Promise<{ page: Page<unknown>; asked: ListQuery }>,
): ListExport {
  return {
    name,
    open(query, _now, params) {
      const { limit: _limit, offset: _offset, after: _after, ...filters } = query;
      const sort = typeof query.sort === 'string' ? query.sort : defaultSort;
      let columns: readonly string[] = [];
      return {
        get columns() {
          return columns;
        },
        async batch(ctx, after, size) {
          const asking = { ...filters, sort, limit: size, offset: 0, ...(after !== undefined ? { after } : {}) };
          const { page, asked } = await read(ctx, asking, params);
          columns = exportColumns(item, asked, new Set());
          const rows = (page.items as Record<string, unknown>[]).map((row) => exportRow(row, asked));
          return { rows, next: page.next };
        },
      };
    },
  };
}

/** A row as the export writes it: `fields=` applied as the list's answer applies it. */
export const exportRow = (row: Record<string, unknown>, query: ListQuery): Record<string, unknown> =>
  query.select ? selectFields(row, query.select, query.expand) : row;
