import type { FastifyReply } from 'fastify';
import { problem } from '../errors.ts';
import type { ListQuery, Selection } from './parse.ts';
import type { QueryReference, ReferencedRow } from './query-model.ts';

/**
 * What a query asks of the rows once they are read: the caller's right to read through its
 * references, the expanded rows each carries, and the fields its answer keeps.
 */

/**
 * Refuses a query that filters through or expands a reference whose entity the caller may not
 * read: 403 AUTH_FORBIDDEN naming the permission, before any row is answered, never a partial row.
 */
export function admitReferences(query: ListQuery, can: (permission: string) => boolean): void {
  for (const reference of query.references) {
    const { permission, key } = reference.target;
    if (!can(permission)) {
      throw problem(
        'AUTH_FORBIDDEN',
        `Requires permission ${permission} to filter by or expand ${reference.name} (${key})`,
        { extensions: { permission } },
      );
    }
  }
}

/** Sets each row's expansion of the reference: the found row its field names, or null. */
export function attachExpansions(
  rows: Record<string, unknown>[],
  reference: QueryReference,
  found: readonly ReferencedRow[],
): void {
  const byId = new Map(found.map((row) => [row.id as string, row]));
  for (const row of rows) {
    const id = row[reference.field];
    row[reference.name] = typeof id === 'string' ? (byId.get(id) ?? null) : null;
  }
}

function pick(row: Record<string, unknown>, names: ReadonlySet<string> | undefined): Record<string, unknown> {
  if (!names) return row;
  const kept: Record<string, unknown> = { id: row.id };
  for (const name of names) if (name in row) kept[name] = row[name];
  return kept;
}

/**
 * The row as `fields=` selects it: its id, the named fields, and each expansion the query asked
 * for, itself narrowed to the fields named inside it (its id always).
 */
export function selectFields(
  row: Record<string, unknown>,
  selection: Selection,
  expand: readonly QueryReference[],
): Record<string, unknown> {
  const kept = pick(row, selection.own);
  for (const reference of expand) {
    const expanded = row[reference.name] as Record<string, unknown> | null | undefined;
    kept[reference.name] = expanded ? pick(expanded, selection.inside.get(reference.name)) : null;
  }
  return kept;
}

/**
 * The answer as `fields=` selects it: each row (a page's items, or the one row of a read) keeps its
 * id and the fields named. Such an answer leaves out fields the route's schema lists as always
 * there, so it is serialised as it stands (JSON.stringify: a date as ISO 8601, as the schema's
 * serialiser writes it) rather than by the schema; an answer without fields= is left to the schema.
 */
export function selectAnswer(reply: FastifyReply, answer: unknown, query: ListQuery): unknown {
  const selection = query.select;
  if (!selection) return answer;
  reply.type('application/json; charset=utf-8').serializer(JSON.stringify);
  const pick = (row: Record<string, unknown>) => selectFields(row, selection, query.expand);
  const value = answer as { items?: Record<string, unknown>[] } & Record<string, unknown>;
  return Array.isArray(value.items) ? { ...value, items: value.items.map(pick) } : pick(value);
}
