import Type, { type TSchema } from 'typebox';
import type { AnyRoute } from '../entity/define.ts';
import type { LiveSource } from './sources.ts';
import { RETRY_MS } from './event-stream.ts';

/** The Last-Event-ID a reconnecting client sends: the position of the last event it received. */
export const LAST_EVENT_ID = 'last-event-id';

/** The headers a stream takes: Last-Event-ID, which an EventSource sends when it reconnects. */
export const StreamHeaders = Type.Object({
  [LAST_EVENT_ID]: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,15}$',
      description:
        'The id of the last event received (an EventSource sends it by itself when it reconnects): the stream first replays every change after it, if it lies within live.replay_minutes, or sends one reset event if not.',
    }),
  ),
});

/** A `text/event-stream` answer, for a route's schema (and OpenAPI). */
export const eventStream = (description: string): TSchema =>
  Type.Unsafe({ description, content: { 'text/event-stream': { schema: { type: 'string' } } } });

/** `GET <list path>/stream`: the list's changes as server-sent events, authorised as the list is. */
export function streamRoute(source: LiveSource): AnyRoute {
  return {
    method: 'GET',
    url: `${source.path}/stream`,
    operationId: source.operationId,
    summary: `Follow ${source.label} as they change`,
    description: [
      `Server-sent events (text/event-stream) for every change of ${source.label} this caller may read, from the outbox after each commit, on any web process.`,
      'Events: created and updated carry data {"id": ..., "row": {...}}, the row as the read route answers this caller; deleted, and removed (an updated row that does not match the filters), carry {"id": ...}; reset (the Last-Event-ID is older than the replay window: reload the list, the stream goes on from now); end carries {"reason": "AUTH_REQUIRED" | "AUTH_FORBIDDEN"} and closes the stream when the caller signed out, was deactivated, lost the permission, or the token expired or was revoked (at the next change, or within live.recheck_seconds).',
      'It takes the list\'s filters, or and fields (docs/api-conventions.md, "Filters"), read when it opens (a relative time such as now is the time it opens): a created row that does not match sends nothing, an updated one that does not match is removed; what the list would refuse is 422 VALIDATION_FAILED (or 403 AUTH_FORBIDDEN for a filter through a reference the caller may not read) before the stream starts.',
      `Each event's id is a position that only grows within the tenant: reconnect with Last-Event-ID to receive every change after it. A comment line is sent every live.heartbeat_seconds; retry: ${RETRY_MS} asks the client to reconnect after ${RETRY_MS / 1000} s. A row is shown as it is when its change is read, so a row changed twice in quick succession may show its later state in both events.`,
      'Limits: live.max_streams_per_caller streams per session or token and live.max_streams per web process, past either 429 RATE_LIMITED with Retry-After; a client that does not read is disconnected once live.max_buffer_bytes wait for it, and resumes with Last-Event-ID.',
    ].join(' '),
    tags: [...source.tags],
    access: source.access,
    // Gated as the list is: a stream is a way to read the same rows.
    ...(source.feature !== undefined ? { feature: source.feature } : {}),
    problems: {
      503: 'This web process is starting or shutting down (NOT_READY: reconnect, and another process serves the stream), or the database busy (DB_BUSY), a statement past its time limit (DB_TIMEOUT) or the database unreachable (DB_UNAVAILABLE): retry after the Retry-After seconds',
      429: "Too many streams open: this caller holds live.max_streams_per_caller, or the process live.max_streams, or the site's streams hold live.max_filters_per_tenant different filters and this one is new (RATE_LIMITED); Retry-After says when to try again",
    },
    schema: {
      headers: StreamHeaders,
      querystring: source.querySchema,
      response: { 200: eventStream(`The changes of ${source.label}, as server-sent events`) },
    },
    handler: ({ tx, request, reply, services, query }) =>
      services.live.open(tx, source.key, request, reply, query as Record<string, unknown>),
  };
}
