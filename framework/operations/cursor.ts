import { problem } from '../errors.ts';
import { TOTAL_CAP } from './page-query.ts';

/** The `after` cursor of keyset paging: opaque to clients, checked against the list and sort it was given for. */

/**
 * Where a page resumes: the sort it was made for, the last row's sort value (as PostgreSQL prints
 * it) and id, and the capped count the walk's first page took, which the pages after it answer as
 * their total rather than counting again (a cursor without it, as earlier releases gave, counts).
 */
export interface Cursor {
  sort: string;
  value: string | null;
  id: string;
  total?: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The largest count a cursor can carry: the cap plus the one row that says the count was stopped. */
const CARRIED_TOTAL_MAX = TOTAL_CAP + 1;

export function encodeCursor(cursor: Cursor): string {
  const parts =
    cursor.total === undefined
      ? [cursor.sort, cursor.value, cursor.id]
      : [cursor.sort, cursor.value, cursor.id, cursor.total];
  return Buffer.from(JSON.stringify(parts), 'utf8').toString('base64url');
}

const isCarriedTotal = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= CARRIED_TOTAL_MAX;

export const badCursor = (detail: string) =>
  problem('VALIDATION_FAILED', detail, { errors: [{ pointer: '/querystring/after', message: detail }] });

/** The cursor `after` carries, for this sort; 422 VALIDATION_FAILED for anything this list did not give. */
export function decodeCursor(after: string, sort: string, idType: 'uuid' | 'text' = 'uuid'): Cursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'));
  } catch {
    throw badCursor('after is not a cursor this list gave');
  }
  if (
    !Array.isArray(parsed) ||
    (parsed.length !== 3 && parsed.length !== 4) ||
    (parsed.length === 4 && !isCarriedTotal(parsed[3])) ||
    typeof parsed[0] !== 'string' ||
    (typeof parsed[1] !== 'string' && parsed[1] !== null) ||
    typeof parsed[2] !== 'string' ||
    (idType === 'uuid' && !UUID.test(parsed[2]))
  ) {
    throw badCursor('after is not a cursor this list gave');
  }
  if (parsed[0] !== sort)
    throw badCursor(`after was given for sort=${parsed[0]}; send the same sort, or start again without after`);
  return parsed.length === 4
    ? { sort, value: parsed[1], id: parsed[2], total: parsed[3] as number }
    : { sort, value: parsed[1], id: parsed[2] };
}
