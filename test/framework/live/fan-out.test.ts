import { describe, expect, it } from 'vitest';
import { fanOut } from '../../../framework/live/fan-out.ts';
import type { BatchResult, Change, ChangedRow } from '../../../framework/live/batch.ts';
import type { EventStream } from '../../../framework/live/event-stream.ts';
import type { OpenStream } from '../../../framework/live/open-stream.ts';
import type { ChangeKind, LiveSource } from '../../../framework/live/sources.ts';

/**
 * Issue 45, point 9 (the list beside 1,000 streams): a batch works out and serializes each change's
 * events once per group of streams of one shape at one position, and hands every stream of a group
 * the same bytes, so its cost does not grow with the streams that receive the same thing.
 */
const source = {
  key: 'testkit.widget',
  kinds: new Map<string, ChangeKind>([['testkit.widget.created', 'created']]),
  subject: undefined,
  rowAccess: false,
} as unknown as LiveSource;

/** A serializer that counts the rows it serializes. */
function counting() {
  const serialize = (row: unknown) => {
    serialize.calls++;
    return JSON.stringify(row);
  };
  serialize.calls = 0;
  return serialize;
}

const stream = (serialize: (row: unknown) => string, fields: string, position = 0): OpenStream => ({
  source,
  sse: {} as EventStream,
  name: undefined,
  position,
  caller: 'session:1',
  permission: undefined,
  access: [],
  needs: [],
  filter: undefined,
  serialize,
  shape: JSON.stringify([source.key, fields, null, []]),
});

const created = (position: number, id: string): Change => ({
  position,
  name: 'testkit.widget.created',
  subjectEntity: null,
  subjectId: null,
  rowId: id,
  age: 0,
});

const batchOf = (ids: string[]): BatchResult => {
  const rows = new Map<string, ChangedRow>(
    ids.map((id) => [id, { values: {}, live: true, matches: [], item: { id, name: `widget ${id}` } }]),
  );
  return { changes: ids.map((id, i) => created(i + 1, id)), served: true, callers: new Map(), rows: [rows] };
};

describe('a batch fans out once per shape', () => {
  it('serializes each row once for three streams of one shape, and hands all three the same Buffer', () => {
    const serialize = counting();
    const streams = [stream(serialize, 'name'), stream(serialize, 'name'), stream(serialize, 'name')];
    const out = fanOut(streams, [source], [new Map()], batchOf(['a', 'b']));
    expect(serialize.calls).toBe(2);
    expect(out).toHaveLength(1);
    expect(out[0]!.streams).toEqual(streams);
    // Both events in the one chunk each stream is written, in position order.
    const text = out[0]!.chunk.toString();
    expect(text).toBe(
      'id: 1\nevent: created\ndata: {"id":"a","row":{"id":"a","name":"widget a"}}\n\n' +
        'id: 2\nevent: created\ndata: {"id":"b","row":{"id":"b","name":"widget b"}}\n\n',
    );
    expect(out[0]!.events.map((e) => [e.event, e.change.position])).toEqual([
      ['created', 1],
      ['created', 2],
    ]);
  });

  it('groups by shape and by position: another fields= and a stream further on each get their own', () => {
    const names = counting();
    const all = counting();
    const a = stream(names, 'name');
    const b = stream(names, 'name');
    const other = stream(all, '');
    const ahead = stream(names, 'name', 1);
    const out = fanOut([a, other, b, ahead], [source], [new Map()], batchOf(['a', 'b']));
    // The row text is shared between groups of one serializer within a change: names twice, all twice.
    expect(names.calls).toBe(2);
    expect(all.calls).toBe(2);
    expect(out.map((o) => o.streams)).toEqual([[a, b], [other], [ahead]]);
    expect(out[2]!.events.map((e) => e.change.position)).toEqual([2]);
  });
});
