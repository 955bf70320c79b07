import type { EventStream } from './event-stream.ts';
import type { LiveSource } from './sources.ts';
import type { StreamFilter } from './stream-query.ts';

/** One open stream: its client's connection and what its batches need to know. */
export interface OpenStream {
  readonly source: LiveSource;
  /** Its connection, which it shares with the other lists of a connection that carries several. */
  readonly sse: EventStream;
  /**
   * Its name on a connection that carries several lists (the list's stream operation id): its
   * events go out as `<name>:<event>`. Undefined: the connection is the list's own.
   */
  readonly name: string | undefined;
  /** The last position considered for it: the next batch shows it the events after. */
  position: number;
  /** `session:<id>` or `token:<id>`: whom the batches check again. */
  readonly caller: string;
  /** The permission the list asks for; undefined: signed in is enough. */
  readonly permission: string | undefined;
  /** The caller's row access (column = value), decided when it opened. */
  readonly access: readonly (readonly [string, unknown])[];
  /** Permissions its query needs besides (the references it filters through): checked at every batch too. */
  readonly needs: readonly string[];
  /** The list's filters it was opened with; undefined: every row matches. */
  readonly filter: StreamFilter | undefined;
  /** The row as the list's route serializes it (with `fields=`, only those fields). */
  readonly serialize: (row: unknown) => string;
  /**
   * What decides the events it receives besides its position: its list, fields, filter and row
   * access. Streams of one shape at one position are sent the same bytes (fan-out.ts).
   */
  readonly shape: string;
}
