import type { Change, ChangedRow } from './batch.ts';
import type { OpenStream } from './open-stream.ts';
import type { ChangeKind, LiveSource } from './sources.ts';
import type { StreamEvent } from './event-stream.ts';
import { sameValue } from '../operations/entity-sql.ts';

/** One event for one stream; its data is serialized once per row and shape, on first use. */
export interface Delivery {
  stream: OpenStream;
  event: StreamEvent;
  data: () => string;
}

/** The row an event of the list names, and what the event is to the list; none: not the list's. */
function subjectOf(source: LiveSource, change: Change): { id: string; kind: ChangeKind } | undefined {
  if (source.subject !== undefined && change.subjectEntity === source.subject && change.subjectId)
    return { id: change.subjectId, kind: source.kinds.get(change.name) ?? 'updated' };
  const kind = source.kinds.get(change.name);
  if (kind && change.rowId) return { id: change.rowId, kind };
  return undefined;
}

/** The caller may see the row: every column of their row access holds its value. */
function visibleTo(stream: OpenStream, row: ChangedRow): boolean {
  return stream.access.every(([column, value]) => sameValue(row.values[column], value));
}

/**
 * What one event of a list is to each of its streams, read against the row as the batch found
 * it: created or updated for a live row the caller may see that matches the stream's filters;
 * removed for an updated one that does not match them (now: the client drops it if it holds it);
 * nothing for a created one that does not match; deleted for a deleted row the caller saw.
 * A row that is gone or hidden from the caller gives that caller nothing: its event carries no
 * row to show, and a row of another owner is never named to them. `filters` gives the index of
 * each filter in the rows' `matches` (the batch statement's order for the source).
 */
export function deliveries(
  source: LiveSource,
  change: Change,
  rows: ReadonlyMap<string, ChangedRow>,
  streams: readonly OpenStream[],
  filters: ReadonlyMap<string, number> = new Map(),
): Delivery[] {
  const subject = subjectOf(source, change);
  if (!subject) return [];
  const row = rows.get(subject.id);
  const serialized = new Map<OpenStream['serialize'], string>();
  const withRow = (stream: OpenStream) => () => {
    let text = serialized.get(stream.serialize);
    if (text === undefined) {
      text = `{"id":${JSON.stringify(subject.id)},"row":${stream.serialize(row!.item)}}`;
      serialized.set(stream.serialize, text);
    }
    return text;
  };
  const idOnly = () => JSON.stringify({ id: subject.id });
  const out: Delivery[] = [];
  for (const stream of streams) {
    if (subject.kind === 'deleted') {
      // A deleted row still there (soft delete) goes to whoever may see it; a row gone for good
      // only to lists without row access (nobody's row can be named to another).
      if (row ? visibleTo(stream, row) : !source.rowAccess) out.push({ stream, event: 'deleted', data: idOnly });
      continue;
    }
    // Gone or deleted since: its deleted event follows (or was the row's last word).
    if (!row?.live || !visibleTo(stream, row)) continue;
    const matches = stream.filter === undefined || row.matches[filters.get(stream.filter.key)!] === true;
    if (matches) out.push({ stream, event: subject.kind, data: withRow(stream) });
    else if (subject.kind === 'updated') out.push({ stream, event: 'removed', data: idOnly });
  }
  return out;
}
