import { createHash } from 'node:crypto';
import { problem } from '../errors.ts';
import { TOTAL_CAP } from './page-query.ts';

/**
 * The `after` cursor of keyset paging: opaque to clients, checked against the list, the sort and
 * the filters it was given for.
 */

/**
 * Where a page resumes: the sort it was made for, the last row's sort value (as PostgreSQL prints
 * it; for a sort by several keys, one per key) and id, the capped count the walk's first page took,
 * which the pages after it answer as their total rather than counting again (a cursor without it,
 * as earlier releases gave, counts), and a digest of the filters it was given under (filterDigest),
 * which a page read under other filters refuses.
 */
export interface Cursor {
  sort: string;
  value: string | null | (string | null)[];
  id: string;
  total?: number;
  filters?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The largest count a cursor can carry: the cap plus the one row that says the count was stopped. */
const CARRIED_TOTAL_MAX = TOTAL_CAP + 1;

/**
 * A short digest of a filter's binding (paging.ts, filterBinding): it tells one filter from another,
 * so a cursor is not followed under filters it was not given for. Empty for no filter.
 */
export const filterDigest = (binding: string): string =>
  binding === '' ? '' : createHash('sha256').update(binding).digest('base64url').slice(0, 16);

export function encodeCursor(cursor: Cursor): string {
  const parts: unknown[] = [cursor.sort, cursor.value, cursor.id];
  if (cursor.total !== undefined || cursor.filters) parts.push(cursor.total ?? null);
  if (cursor.filters) parts.push(cursor.filters);
  return Buffer.from(JSON.stringify(parts), 'utf8').toString('base64url');
}

const isCarriedTotal = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= CARRIED_TOTAL_MAX;

const isSortValue = (value: unknown): value is Cursor['value'] =>
  typeof value === 'string' ||
  value === null ||
  (Array.isArray(value) && value.length > 1 && value.every((v) => typeof v === 'string' || v === null));

export const badCursor = (detail: string) =>
  problem('VALIDATION_FAILED', detail, { errors: [{ pointer: '/querystring/after', message: detail }] });

/**
 * The cursor `after` carries, for this sort and these filters (their binding, paging.ts
 * filterBinding); 422 VALIDATION_FAILED for anything this list did not give, or gave for another
 * sort or other filters.
 */
export function decodeCursor(after: string, sort: string, idType: 'uuid' | 'text' = 'uuid', binding = ''): Cursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'));
  } catch {
    throw badCursor('after is not a cursor this list gave');
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length < 3 ||
    parsed.length > 5 ||
    (parsed.length >= 4 && !isCarriedTotal(parsed[3]) && !(parsed.length === 5 && parsed[3] === null)) ||
    (parsed.length === 5 && (typeof parsed[4] !== 'string' || parsed[4] === '')) ||
    typeof parsed[0] !== 'string' ||
    !isSortValue(parsed[1]) ||
    typeof parsed[2] !== 'string' ||
    (idType === 'uuid' && !UUID.test(parsed[2]))
  ) {
    throw badCursor('after is not a cursor this list gave');
  }
  if (parsed[0] !== sort)
    throw badCursor(`after was given for sort=${parsed[0]}; send the same sort, or start again without after`);
  const filters = parsed.length === 5 ? (parsed[4] as string) : '';
  if (filters !== filterDigest(binding))
    throw badCursor('after was given with other filters (or q); send the same filters, or start again without after');
  return {
    sort,
    value: parsed[1],
    id: parsed[2],
    ...(isCarriedTotal(parsed[3]) ? { total: parsed[3] } : {}),
    ...(filters ? { filters } : {}),
  };
}
