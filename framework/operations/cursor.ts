import { problem } from '../errors.ts';

/** The `after` cursor of keyset paging: opaque to clients, checked against the list and sort it was given for. */

/** Where a page resumes: the sort it was made for, the last row's sort value (as PostgreSQL prints it) and id. */
export interface Cursor {
  sort: string;
  value: string | null;
  id: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.sort, cursor.value, cursor.id]), 'utf8').toString('base64url');
}

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
    parsed.length !== 3 ||
    typeof parsed[0] !== 'string' ||
    (typeof parsed[1] !== 'string' && parsed[1] !== null) ||
    typeof parsed[2] !== 'string' ||
    (idType === 'uuid' && !UUID.test(parsed[2]))
  ) {
    throw badCursor('after is not a cursor this list gave');
  }
  if (parsed[0] !== sort) throw badCursor(`after was given for sort=${parsed[0]}; send the same sort, or start again without after`);
  return { sort, value: parsed[1], id: parsed[2] };
}

