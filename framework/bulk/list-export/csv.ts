/**
 * Rows as CSV (RFC 4180: fields separated by commas, records by CRLF, a field holding a comma, a
 * double quote, CR or LF enclosed in double quotes with each double quote doubled) that is safe
 * to open in a spreadsheet: a text cell starting with =, +, -, @, a tab or a carriage return would
 * be read as a formula there, so it is prefixed with ' (OWASP's rule on CSV injection). Numbers,
 * booleans and dates are written as they are; a missing value is an empty field; a nested value
 * (a list, an expanded reference) is its JSON text.
 */

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One text cell: prefixed when a spreadsheet would run it, quoted when RFC 4180 asks. */
function textCell(text: string): string {
  const safe = FORMULA_START.test(text) ? `'${text}` : text;
  return NEEDS_QUOTES.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return textCell(value);
  return textCell(JSON.stringify(value));
}

/** One record, ended by CRLF. */
export function csvRecord(values: readonly unknown[]): string {
  return `${values.map(csvCell).join(',')}\r\n`;
}

/** The header record: the column names (checked like any text cell). */
export const csvHeader = (columns: readonly string[]): string => csvRecord(columns);

/** Rows as records of these columns, in order. */
export function csvRows(rows: readonly Record<string, unknown>[], columns: readonly string[]): string {
  let out = '';
  for (const row of rows) out += csvRecord(columns.map((c) => row[c]));
  return out;
}

/** Rows as NDJSON: one JSON object a line, holding these columns (a field without a value left out, as the JSON list does). */
export function ndjsonRows(rows: readonly Record<string, unknown>[], columns: readonly string[]): string {
  let out = '';
  for (const row of rows) {
    const line: Record<string, unknown> = {};
    for (const c of columns) if (row[c] !== undefined) line[c] = row[c];
    out += `${JSON.stringify(line)}\n`;
  }
  return out;
}
