import type { TSchema } from 'typebox';
import type { ListQuery } from '../../query/parse.ts';
import { selectFields } from '../../query/expansion.ts';

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

/** A row as the export writes it: `fields=` applied as the list's answer applies it. */
export const exportRow = (row: Record<string, unknown>, query: ListQuery): Record<string, unknown> =>
  query.select ? selectFields(row, query.select, query.expand) : row;
