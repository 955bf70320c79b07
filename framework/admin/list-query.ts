import Type, { type TSchema } from 'typebox';
import { WithDefault } from '../entity/storage.ts';

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
