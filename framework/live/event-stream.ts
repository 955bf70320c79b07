import { Readable } from 'node:stream';
import type { ServerResponse } from 'node:http';

/** The events of a stream (docs/api-conventions.md, "Live changes"). */
export type StreamEvent = 'created' | 'updated' | 'deleted' | 'removed' | 'reset' | 'end';

/** An event's name on the wire: a list's event on a connection that carries several is `<list>:<event>`. */
export type EventName = StreamEvent | `${string}:${StreamEvent}`;

/** Why a stream ended with `event: end`: the caller's refusal, as the list's route would answer it now. */
export type EndReason = 'AUTH_REQUIRED' | 'AUTH_FORBIDDEN';

/** How long a client waits before reconnecting, told once when a stream opens (the `retry:` field). */
export const RETRY_MS = 2000;

/** An event as the stream sends it: its position (the client's Last-Event-ID on reconnect), name and data (JSON text). */
export const eventText = (event: EventName, data: string, position?: number): string =>
  `${position === undefined ? '' : `id: ${position}\n`}event: ${event}\ndata: ${data}\n\n`;

// The same bytes for every stream: a heartbeat allocates nothing per stream.
const HEARTBEAT = Buffer.from(': heartbeat\n\n');

/**
 * One open stream's connection: a Readable that fastify pipes to the response, written as
 * server-sent events. What the client has not read yet is bounded: past `maxBuffered` bytes (in
 * this Readable and the response's buffer together) the connection is dropped, and the client
 * resumes from its last event id. No database connection is ever held here.
 */
export class EventStream {
  readonly readable = new Readable({ read() {} });
  private readonly response: ServerResponse;
  private readonly maxBuffered: number;
  private readonly onDropped: () => void;
  private closed = false;

  constructor(response: ServerResponse, maxBuffered: number, onDropped: () => void) {
    this.response = response;
    this.maxBuffered = maxBuffered;
    this.onDropped = onDropped;
  }

  get isClosed(): boolean {
    return this.closed || this.response.destroyed;
  }

  /**
   * The reconnection delay, first of all; with a position, also where the stream starts (an `id:`
   * without an event), so a client that sees no event yet can still resume from there.
   */
  open(position?: number): void {
    this.write(`retry: ${RETRY_MS}\n${position === undefined ? '' : `id: ${position}\n`}\n`);
  }

  /**
   * An event with its position (the client's Last-Event-ID on reconnect) and its data (JSON text);
   * on a connection that carries several lists, a list's event is named `<list>:<event>`.
   */
  event(event: EventName, data: string, position?: number): boolean {
    return this.write(eventText(event, data, position));
  }

  /**
   * Events already written out (eventText, concatenated): a batch sends each stream its events in
   * one write, and streams that receive the same events are given the same Buffer, not a copy each.
   */
  send(events: Buffer): boolean {
    return this.write(events);
  }

  /** A comment line: keeps proxies and the client from taking a quiet stream for a dead one. */
  heartbeat(): boolean {
    return this.write(HEARTBEAT);
  }

  /** The last event, then the end of the answer: the client should not reconnect. */
  end(reason: EndReason): void {
    this.event('end', JSON.stringify({ reason }));
    this.close();
  }

  /** Ends the answer cleanly (shutdown): an EventSource reconnects, elsewhere, from its last event id. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.readable.push(null);
  }

  /** Bytes written and not yet taken by the client. */
  buffered(): number {
    return this.readable.readableLength + this.response.writableLength;
  }

  private write(chunk: string | Buffer): boolean {
    if (this.isClosed) return false;
    this.readable.push(chunk);
    if (this.buffered() > this.maxBuffered) {
      // A client that does not read: drop it rather than hold its backlog.
      this.closed = true;
      this.response.destroy();
      this.readable.destroy();
      this.onDropped();
      return false;
    }
    return true;
  }
}
