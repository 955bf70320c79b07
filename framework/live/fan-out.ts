import type { BatchResult, Change } from './batch.ts';
import { deliveries } from './deliveries.ts';
import { eventText, type StreamEvent } from './event-stream.ts';
import type { OpenStream } from './open-stream.ts';
import type { LiveSource } from './sources.ts';

/** What a batch sends every stream of one shape at one position: the same bytes to each. */
export interface Outgoing {
  readonly streams: readonly OpenStream[];
  /** Their events, written out and concatenated: one Buffer, written once to each of the streams. */
  readonly chunk: Buffer;
  /**
   * Each event in it, with the change it tells of (the metrics count them per stream) and its text
   * (a connection that carries several lists puts its lists' events in commit order).
   */
  readonly events: readonly { readonly event: StreamEvent; readonly change: Change; readonly text: string }[];
}

/**
 * What a batch sends its streams. Streams of one shape (list, fields, filter and row access:
 * OpenStream.shape, decided when they opened, and a carried list's name) that are at the same position receive the same
 * events, so the events are worked out, serialized and written out once per such group, whatever
 * the number of streams in it: the cost of a batch grows with the groups, and with the streams only
 * by one write of a shared Buffer each. `filters[i]` gives the index of each filter of `sources[i]`
 * in the rows' `matches`.
 */
export function fanOut(
  streams: readonly OpenStream[],
  sources: readonly LiveSource[],
  filters: readonly ReadonlyMap<string, number>[],
  read: BatchResult,
): Outgoing[] {
  // By position, then shape: the shape strings are the streams' own, made when they opened, so
  // grouping a stream makes no string and hashes none anew.
  const byPosition = new Map<number, Map<string, OpenStream[]>>();
  for (const stream of streams) {
    let shapes = byPosition.get(stream.position);
    if (!shapes) byPosition.set(stream.position, (shapes = new Map()));
    const group = shapes.get(stream.shape);
    if (group) group.push(stream);
    else shapes.set(stream.shape, [stream]);
  }
  const groups = [...byPosition.values()].flatMap((shapes) => [...shapes.values()]);
  // Each group's first stream stands for the group.
  const leaders = new Map<OpenStream, { texts: string[]; events: Outgoing['events'][number][] }>();
  for (const group of groups) leaders.set(group[0]!, { texts: [], events: [] });
  const firsts = [...leaders.keys()];
  for (const change of read.changes) {
    for (const [i, source] of sources.entries()) {
      const followers = firsts.filter((s) => s.source === source && s.position < change.position);
      if (followers.length === 0) continue;
      for (const delivery of deliveries(source, change, read.rows[i]!, followers, filters[i])) {
        const out = leaders.get(delivery.stream)!;
        const { name } = delivery.stream;
        const text = eventText(
          name === undefined ? delivery.event : `${name}:${delivery.event}`,
          delivery.data(),
          change.position,
        );
        out.texts.push(text);
        out.events.push({ event: delivery.event, change, text });
      }
    }
  }
  const outgoing: Outgoing[] = [];
  for (const group of groups) {
    const { texts, events } = leaders.get(group[0]!)!;
    if (texts.length > 0) outgoing.push({ streams: group, chunk: Buffer.from(texts.join('')), events });
  }
  return outgoing;
}
