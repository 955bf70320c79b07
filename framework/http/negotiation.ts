import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { AnyRoute } from '../entity/define.ts';
import { problem } from '../errors.ts';

/**
 * Content negotiation for the JSON API (RFC 9110, 12.5.1): a request whose Accept names no media
 * type the route can answer is refused 406 NOT_ACCEPTABLE (as application/problem+json), rather
 * than answered in JSON it did not ask for. What a route can answer is decided at boot from its
 * declared answers: JSON, unless an answer declares its own media types (an upload's bytes, an
 * event stream); a list that exports (RouteDefinition.exports) also CSV and NDJSON. A route that
 * sends any stored type (a file's own), or answers with no body, is not checked. A request without
 * Accept, or with *\/* among its ranges, takes the route's first type.
 */

export const JSON_TYPE = 'application/json';
export const CSV_TYPE = 'text/csv';
export const NDJSON_TYPE = 'application/x-ndjson';

/** The formats a list exports in, by the name `?format=` takes. */
export const EXPORT_FORMATS = { json: JSON_TYPE, csv: CSV_TYPE, ndjson: NDJSON_TYPE } as const;
export type ExportFormat = keyof typeof EXPORT_FORMATS;

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

/** The media ranges of an Accept header, in order; a range that cannot be read is left out. */
export function mediaRanges(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [range, ...parameters] = part.split(';');
    const [type, subtype] = range!.trim().toLowerCase().split('/');
    if (!type || !subtype) continue;
    let q = 1;
    for (const parameter of parameters) {
      const [name, value] = parameter.split('=').map((s) => s.trim());
      if (name?.toLowerCase() === 'q') q = Number(value);
    }
    if (Number.isFinite(q) && q >= 0 && q <= 1) ranges.push({ type, subtype, q });
  }
  return ranges;
}

/** How well a range takes a type: the more specific the range, the higher; -1 when it does not. */
function specificity(range: MediaRange, offered: string): number {
  const [type, subtype] = offered.split('/');
  if (range.type === '*' && range.subtype === '*') return 0;
  if (range.type !== type) return -1;
  if (range.subtype === '*') return 1;
  return range.subtype === subtype ? 2 : -1;
}

/**
 * The offered type the Accept header prefers (the first offered on a tie), or undefined when it
 * takes none of them; with no Accept header, the first offered.
 */
export function preferredType(header: string | string[] | undefined, offered: readonly string[]): string | undefined {
  if (header === undefined) return offered[0];
  const ranges = mediaRanges(Array.isArray(header) ? header.join(',') : header);
  if (ranges.length === 0) return offered[0];
  let best: { type: string; q: number } | undefined;
  for (const type of offered) {
    // The most specific range that takes the type gives its quality.
    let match: { q: number; specificity: number } | undefined;
    for (const range of ranges) {
      const s = specificity(range, type);
      if (s >= 0 && (!match || s > match.specificity)) match = { q: range.q, specificity: s };
    }
    if (match && match.q > 0 && (!best || match.q > best.q)) best = { type, q: match.q };
  }
  return best?.type;
}

const contentTypes = (schema: TSchema): string[] | undefined => {
  const content = (schema as { content?: Record<string, unknown> }).content;
  return content ? Object.keys(content) : undefined;
};

const isNoBody = (schema: TSchema): boolean => (schema as { type?: unknown }).type === 'null';

/**
 * The media types a route of the API answers in, first the default; undefined for a route that
 * is not checked (outside the API, any stored type, or no body).
 */
export function offeredTypes(route: AnyRoute): string[] | undefined {
  if (!route.url.startsWith('/api/')) return undefined;
  const offered = new Set<string>();
  for (const [status, schema] of Object.entries(route.schema.response)) {
    const code = Number(status);
    if (code < 200 || code > 299 || isNoBody(schema)) continue;
    for (const type of contentTypes(schema) ?? [JSON_TYPE]) offered.add(type);
  }
  if ('exports' in route && route.exports) {
    offered.add(CSV_TYPE);
    offered.add(NDJSON_TYPE);
  }
  if (offered.size === 0 || offered.has('*/*')) return undefined;
  return [...offered];
}

/** What the route answers with: 406 NOT_ACCEPTABLE when Accept takes none of its types. */
export function negotiate(request: FastifyRequest, offered: readonly string[]): string {
  const chosen = preferredType(request.headers.accept, offered);
  if (chosen === undefined) {
    throw problem(
      'NOT_ACCEPTABLE',
      `This route answers ${offered.join(', ')}; the Accept header (${String(request.headers.accept)}) takes none of them`,
      { extensions: { accepts: offered } },
    );
  }
  return chosen;
}

/**
 * The format an exporting list's request asks for: `?format=` when given (it wins over Accept,
 * for a link a browser follows), else the type Accept prefers.
 */
export function exportFormatOf(request: FastifyRequest, offered: readonly string[]): ExportFormat {
  const written = (request.query as Record<string, unknown> | undefined)?.format;
  if (typeof written === 'string' && written in EXPORT_FORMATS) return written as ExportFormat;
  const type = negotiate(request, offered);
  return type === CSV_TYPE ? 'csv' : type === NDJSON_TYPE ? 'ndjson' : 'json';
}
