import type { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import { parse } from 'csv-parse';
import { problem, type ProblemError } from '../../errors.ts';

/** An upload's formats. */
export type ImportFormat = 'csv' | 'ndjson';

/** One data row of an upload: its line (where it starts, from 1) and its values, or why it is no row. */
export type UploadRow = { line: number; values: Record<string, unknown> } | { line: number; refused: ProblemError };

/** The upload cannot be read on from here on: the import stops with this problem. */
export class UnreadableUpload extends Error {
  readonly problem: ProblemError;
  constructor(refusal: ProblemError) {
    super(refusal.message);
    this.problem = refusal;
  }
}

const notRow = (detail: string) => problem('VALIDATION_FAILED', detail, { errors: [{ pointer: '', message: detail }] });

/** A byte order mark, which editors on Windows put before the first line (and the CSV reader skips too). */
const BOM = '\uFEFF';

/**
 * The rows of an NDJSON upload, streamed a line at a time: one JSON object per line, blank lines
 * skipped, a byte order mark before the first line ignored. A line that is not a JSON object is
 * that row's refusal; the others go on.
 */
export async function* ndjsonRows(source: Readable): AsyncGenerator<UploadRow> {
  const lines = createInterface({ input: source, crlfDelay: Number.POSITIVE_INFINITY });
  let line = 0;
  for await (const read of lines) {
    line += 1;
    const text = line === 1 && read.startsWith(BOM) ? read.slice(1) : read;
    if (text.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      yield { line, refused: notRow('The line is not JSON') };
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      yield { line, refused: notRow('The line is not a JSON object') };
    else yield { line, values: value as Record<string, unknown> };
  }
}

/**
 * The rows of a CSV upload (RFC 4180, csv-parse as a stream): the first record names the columns,
 * each an API field name; each later record is a row whose non-empty cells are its values, as text
 * (the caller converts them by the create schema). A record with another number of cells than the
 * header is that row's refusal; quoting that cannot be read stops the import.
 */
export async function* csvRows(source: Readable): AsyncGenerator<UploadRow | { header: string[] }> {
  const parser = source.pipe(
    parse({ info: true, relax_column_count: true, skip_empty_lines: true, bom: true, max_record_size: 1024 * 1024 }),
  );
  source.on('error', (err) => parser.destroy(err));
  let header: string[] | undefined;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      // A record ends at info.lines; the line breaks inside its quoted cells say where it started.
      const breaks = record.reduce((n, cell) => n + (cell.match(/\n/g)?.length ?? 0), 0);
      const line = info.lines - breaks;
      if (!header) {
        header = record.map((name) => name.trim());
        yield { header };
        continue;
      }
      if (record.length !== header.length) {
        yield { line, refused: notRow(`The row has ${record.length} cells where the header names ${header.length}`) };
        continue;
      }
      const values: Record<string, unknown> = {};
      for (const [i, name] of header.entries()) if (record[i] !== '') values[name] = record[i];
      yield { line, values };
    }
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('CSV_')) {
      const at = (err as { lines?: unknown }).lines;
      throw new UnreadableUpload(
        problem(
          'IMPORT_UNREADABLE',
          `The upload is not CSV from line ${typeof at === 'number' ? at : '?'} on: ${(err as Error).message}`,
        ),
      );
    }
    throw err;
  }
}
