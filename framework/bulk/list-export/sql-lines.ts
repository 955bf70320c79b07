import type { TSchema } from 'typebox';
import { columnType } from '../../schema/column-types.ts';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import { secretNames } from '../../operations/entity-query.ts';
import { quote } from '../../operations/entity-sql.ts';

/**
 * An export's lines written by PostgreSQL: for each row, one text that is already its CSV record
 * or NDJSON line, the same text csv.ts writes from the row as node-postgres reads it. A batch is
 * then one text (KeysetPager.textBatch), and an export allocates nothing per row in the service,
 * where reading rows as objects and writing a string per cell made garbage the collector promoted
 * between full collections (RSS +375 MiB for a million rows, docs/performance.md).
 *
 * Only the column types whose text PostgreSQL writes exactly as the row-by-row path does are
 * written here: text, uuid, integer, bigint, boolean, timestamptz and arrays of these but the last.
 * An export with a column of another type (date, double precision, jsonb), a secret or computed
 * field, an afterRead hook or an expansion goes row by row as before (entity-export.ts).
 */

/** How one field is written, as SQL over the row's column: its CSV cell and its JSON value. */
export interface SqlCell {
  csv: string;
  json: string;
}

const SCALARS = new Set(['text', 'uuid', 'int4', 'int8', 'bool']);

/** ISO 8601 in UTC with milliseconds, as Date.prototype.toISOString writes it. */
const isoText = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A SQL string literal. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * A text cell as csv.ts's textCell: prefixed with ' when it starts with =, +, -, @, a tab or a
 * carriage return (OWASP's CSV injection rule), then enclosed in double quotes, each doubled, when
 * it holds a double quote, a comma, CR or LF (RFC 4180; the prefix is none of these, so the text
 * itself says whether to quote). Written inline, not as a subquery PostgreSQL would run per cell.
 */
function textCell(text: string): string {
  const safe = `case when left(${text}, 1) in ('=', '+', '-', '@', E'\\t', E'\\r') then '''' || ${text} else ${text} end`;
  return `case when ${text} ~ E'[",\\r\\n]' then '"' || replace(${safe}, '"', '""') || '"' else ${safe} end`;
}

/** The cell of one column of a catalog type; undefined for a type this file does not write. */
function cellOf(column: string, catalog: string): SqlCell | undefined {
  if (catalog.endsWith('[]')) {
    // csv.ts writes a list as its JSON text, a text cell; to_json writes arrays without spaces, as JSON.stringify.
    return SCALARS.has(catalog.slice(0, -2))
      ? { csv: `coalesce(${textCell(`to_json(${column})::text`)}, '')`, json: column }
      : undefined;
  }
  switch (catalog) {
    case 'text':
      return { csv: `coalesce(${textCell(column)}, '')`, json: column };
    case 'uuid':
    case 'int4':
    case 'int8':
    case 'bool':
      // Digits, true or false, or hex with dashes: never a formula's start, nothing to quote.
      return { csv: `coalesce(${column}::text, '')`, json: column };
    case 'timestamptz':
      return { csv: `coalesce(${isoText(column)}, '')`, json: isoText(column) };
    default:
      return undefined;
  }
}

/** The column type a field's schema calls for; '' when none derives from it (then it is not written here). */
function catalogOf(schema: TSchema): string {
  try {
    return columnType(schema).catalog;
  } catch {
    return '';
  }
}

/**
 * The fields of the entity PostgreSQL can write, by name (decided once, at boot): the id, the
 * timestamps and every stored field of a type above that is not secret.
 */
export function sqlCells(entity: ResolvedEntity): ReadonlyMap<string, SqlCell> {
  const cells = new Map<string, SqlCell>([
    ['id', cellOf(quote('id'), 'uuid')!],
    ['createdAt', cellOf(quote('created_at'), 'timestamptz')!],
    ['updatedAt', cellOf(quote('updated_at'), 'timestamptz')!],
  ]);
  const secret = secretNames(entity);
  for (const field of entity.fields) {
    if (secret.has(field)) continue;
    const cell = cellOf(quote(entity.columns[field]!), catalogOf(entity.def.fields[field]!));
    if (cell) cells.set(field, cell);
  }
  return cells;
}

/**
 * The SQL of one row's line, for these columns in order (each one of `cells`), ended as csv.ts
 * ends it: a CSV record by CRLF, an NDJSON line by LF. The NDJSON object is written member by
 * member rather than by row_to_json over a subquery per row; to_json escapes as JSON.stringify.
 */
export function lineSql(
  format: 'csv' | 'ndjson',
  columns: readonly string[],
  cells: ReadonlyMap<string, SqlCell>,
): string {
  const cell = (name: string) => cells.get(name)!;
  if (format === 'csv') return `${columns.map((c) => cell(c).csv).join(` || ',' || `)} || E'\\r\\n'`;
  const members = columns.map(
    (c, i) =>
      `${literal(`${i === 0 ? '{' : ','}${JSON.stringify(c)}:`)} || coalesce(to_json(${cell(c).json})::text, 'null')`,
  );
  return `${members.join(' || ')} || E'}\\n'`;
}
