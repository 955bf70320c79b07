/**
 * Where a page resumes: the sort it was made for, the last row's sort value (as PostgreSQL prints
 * it; for a sort by several keys, one per key) and id, and the capped count the walk's first page
 * took, which the pages after it answer as their total rather than counting again.
 */
export interface Cursor {
  sort: string;
  value: string | null | (string | null)[];
  id: string;
  total: number;
}

/**
 * What a cursor is good for, besides its sort (which it carries, so that a cursor of another sort
 * is told apart): the list it was given by, the tenant, and the list's filters: their conditions
 * and values, or for a query's filters the parameters as the request wrote them (paging.ts,
 * filterText), so that `deadline=lt.now` holds from page to page while `now` moves on.
 */
export interface CursorScope {
  /** The list: a digest of its declaration (table, id, fixed conditions, sorts; KeysetPager.listKey). */
  list: string;
  tenantId: string;
  /** The list's conditions for this request and their values (search text, row access, filters), canonical. */
  filters: string;
}

/**
 * Seals list cursors and opens them, with the installation's cursor key (operations/cursor.ts,
 * CursorSeal): a list answers only the cursors it gave, for the same tenant and filters.
 */
export interface ListCursors {
  seal(cursor: Cursor, scope: CursorScope): string;
  /** The cursor `after` carries, for this scope and sort; 422 VALIDATION_FAILED for anything this list did not give. */
  open(after: string, scope: CursorScope, sort: string, idType?: 'uuid' | 'text'): Cursor;
}
