import Type, { type TSchema } from 'typebox';
import { WithDefault } from '../entity/storage.ts';
import type { PageQuery } from '../contracts/operations.ts';

/**
 * The order an admin list opens in: the newest first, so what was just made is on page 1. The
 * API's lists keep their documented default (oldest first); a page asks for this one.
 */
export const ADMIN_LIST_SORT = '-createdAt';

/**
 * A list route's query schema as an admin page takes it: the same parameters, with `sort`
 * defaulting to the newest first. Built once, when the page registers.
 */
export function newestFirst(listQuery: TSchema): TSchema {
  const object = listQuery as { properties?: Record<string, TSchema>; additionalProperties?: boolean };
  const sort = object.properties?.sort;
  if (!sort) return listQuery;
  return Type.Object(
    { ...object.properties, sort: WithDefault(sort, ADMIN_LIST_SORT as never) },
    { additionalProperties: object.additionalProperties ?? false },
  );
}

/**
 * The paging part of a list page's validated query, for a list whose query schema is built at
 * boot (a generated list, a QueryList's), whose type the compiler cannot see: limit, offset and
 * sort are there, the schema having declared their defaults. A page whose schema lacks them is a
 * mistake of its author, refused at its first request.
 */
export function pagingOf(query: Readonly<Record<string, unknown>>): PageQuery {
  const { limit, offset, sort, after, q } = query;
  if (typeof limit !== 'number' || typeof offset !== 'number' || typeof sort !== 'string')
    throw new Error('pagingOf: the page’s query schema declares no paging (limit, offset, sort with their defaults)');
  return {
    limit,
    offset,
    sort,
    ...(typeof after === 'string' ? { after } : {}),
    ...(typeof q === 'string' ? { q } : {}),
  };
}

/** What templates/admin/components/pager.eta takes from a list paged by its cursor. */
export interface CursorPager {
  summary: string;
  first?: { href: string };
  next?: { href: string; label?: string };
}

/**
 * The pager of a hand-written list paged by its cursor, in the one pager component every list
 * shows: the next page's link when there is one (its address from ListFilters' request, which
 * keeps the filters, q and sort the cursor was given under), in the list's own words when it has
 * some ("Older files"), and a link back to the first page when the page is not the first.
 */
export function cursorPager(next: string | null, options: { label?: string; first?: string | null } = {}): CursorPager {
  return {
    summary: '',
    ...(options.first ? { first: { href: options.first } } : {}),
    ...(next !== null ? { next: { href: next, ...(options.label ? { label: options.label } : {}) } } : {}),
  };
}
