import type { IncomingHttpHeaders } from 'node:http';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parse as parseRange } from 'range-parser';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type, { type TSchema } from 'typebox';
import send from '@fastify/send';
import { notFound, problem } from '../errors.ts';
import { problemResponse } from '../openapi/problem-schema.ts';
import { ifNoneMatchHits } from './etag.ts';

/** Bytes that can be read from any offset: a file under a root directory (the local disk). */
export interface SeekableSource {
  /** Directory the file must lie under; a path escaping it is refused. */
  root: string;
  /** Path of the file, relative to root. */
  path: string;
}

/** Bytes a store streams (an object store): from the start, or from any offset when `seekable`. */
export interface StreamSource {
  size: number;
  mtime: Date;
  /** The store reads any byte range (S3's ranged GetObject): Range is answered as for a file. */
  seekable?: boolean;
  /** Opens the bytes, all of them or the inclusive range; called only when a body is sent. */
  open(range?: { start: number; end: number }): Readable | Promise<Readable>;
}

export interface StreamOptions {
  /** Content-Type to send; by default a file's is derived from its extension, a stream's is application/octet-stream. */
  contentType?: string;
  /** Sent with every answer but errors (e.g. Content-Disposition, X-Content-Type-Options). */
  headers?: Readonly<Record<string, string>>;
  /** Cache-Control, when one is wanted; none by default. */
  cacheControl?: string;
  /**
   * A strong entity tag the caller knows for these bytes (e.g. `"<sha256>"`), instead of the weak
   * one derived from size and mtime: If-None-Match, If-Match and If-Range compare with it.
   */
  etag?: string;
}

/** The media range for "whatever type the stored bytes were declared with". */
export const ANY_MEDIA_TYPE = '*/*';

const binary = (description: string, mediaType: string): TSchema =>
  Type.Unsafe({ description, content: { [mediaType]: { schema: { type: 'string', format: 'binary' } } } });

/**
 * The answers a streaming route documents, for its `schema.response`. `mediaType` is the
 * Content-Type the bytes are sent with, or a media range (ANY_MEDIA_TYPE) for a route that sends
 * each file's own type, which its description then names.
 */
export function streamResponses(description: string, mediaType = 'application/octet-stream'): Record<number, TSchema> {
  return {
    200: binary(description, mediaType),
    206: binary(`A byte range of it (Range: bytes=first-last, first-, or -suffix), with Content-Range`, mediaType),
    304: Type.Null({
      description:
        'Not modified: the If-None-Match names the current ETag, or If-Modified-Since is not older than Last-Modified',
    }),
    412: problemResponse('An If-Match or If-Unmodified-Since precondition failed (PRECONDITION_FAILED)'),
    416: problemResponse(
      'No byte of the Range lies within the content (RANGE_NOT_SATISFIABLE); Content-Range gives the size',
    ),
  };
}

/**
 * Answers a GET or HEAD with stored bytes. A seekable source goes through @fastify/send: Range
 * (as rangeFor reads it: one range, 206 with Content-Range; none satisfiable, 416; several or
 * malformed, the whole body), If-None-Match and If-Modified-Since
 * (304), If-Match and If-Unmodified-Since (412), a weak ETag from size and mtime, Last-Modified,
 * Content-Length and Accept-Ranges. A stream source answers the same (fromStream), its ranges
 * only when the store can seek (else Range is ignored, the whole is sent). Sets the status and headers on the reply
 * and returns what the handler returns: the body stream, or nothing to send.
 */
export async function streamFrom(
  request: FastifyRequest,
  reply: FastifyReply,
  source: SeekableSource | StreamSource,
  options: StreamOptions = {},
): Promise<Readable | undefined> {
  return 'root' in source ? fromFile(request, reply, source, options) : fromStream(request, reply, source, options);
}

async function fromFile(
  request: FastifyRequest,
  reply: FastifyReply,
  source: SeekableSource,
  options: StreamOptions,
): Promise<Readable | undefined> {
  // send() takes a URL path and decodes it; encoding each segment keeps a file name as written.
  const path = `/${source.path.split('/').map(encodeURIComponent).join('/')}`;
  let asked: { method?: string | undefined; headers: IncomingHttpHeaders } = request.raw;
  if (options.etag !== undefined) {
    const decided = ownValidator(request, options.etag);
    if (decided === 412) throw problem('PRECONDITION_FAILED', 'The If-Match precondition does not hold');
    if (decided === 304) {
      reply.code(304).header('etag', options.etag);
      decorate(reply, options);
      return noBody(request);
    }
    asked = { method: request.raw.method, headers: decided };
  }
  const range = asked.headers.range;
  if (range !== undefined) {
    // send() parses ranges loosely (parseInt): it is given only a range rangeFor has read.
    const size = await stat(join(source.root, source.path)).then(
      (s) => s.size,
      () => undefined,
    );
    const headers: IncomingHttpHeaders = { ...asked.headers };
    const normalised = size === undefined ? undefined : rangeFor(range, size);
    if (normalised === undefined) delete headers.range;
    else headers.range = normalised;
    asked = { method: request.raw.method, headers };
  }
  const result = await send(asked as typeof request.raw, path, {
    root: source.root,
    index: false,
    dotfiles: 'ignore',
    cacheControl: false,
    contentType: options.contentType === undefined,
    etag: options.etag === undefined,
  });
  if (result.type === 'error') {
    result.stream.destroy();
    const status = result.statusCode;
    if (status === 416) {
      reply.header('content-range', result.headers['Content-Range']);
      throw problem(
        'RANGE_NOT_SATISFIABLE',
        `No byte of the requested range lies within the content (${result.headers['Content-Range']})`,
      );
    }
    if (status === 412)
      throw problem('PRECONDITION_FAILED', 'The If-Match or If-Unmodified-Since precondition does not hold');
    // Missing, a directory's name, a path leaving the root or not decodable: all "no such file".
    if (status === 404 || status === 403 || status === 400) throw notFound();
    throw result.metadata.error;
  }
  if (result.type === 'directory') {
    result.stream.destroy();
    throw notFound();
  }
  reply.code(result.statusCode).headers(result.headers);
  if (options.etag !== undefined) reply.header('etag', options.etag);
  decorate(reply, options);
  if (result.statusCode === 304) {
    result.stream.destroy();
    return noBody(request);
  }
  return result.stream;
}

/**
 * The same answers as fromFile gives, for bytes a store streams: the entity-tag conditions, then
 * If-Unmodified-Since (412) and If-Modified-Since (304) to the second, then, for a seekable store,
 * Range as rangeFor reads it (If-Range permitting): 206 with Content-Range, or 416.
 */
async function fromStream(
  request: FastifyRequest,
  reply: FastifyReply,
  source: StreamSource,
  options: StreamOptions,
): Promise<Readable | undefined> {
  // The same validators as send() gives a file, so a file moved to such a store keeps its ETag.
  const etag = options.etag ?? `W/"${source.size.toString(16)}-${source.mtime.getTime().toString(16)}"`;
  const decided = ownValidator(request, etag);
  if (decided === 412) throw problem('PRECONDITION_FAILED', 'The If-Match precondition does not hold');
  if (decided === 304) {
    reply.code(304).header('etag', etag);
    decorate(reply, options);
    return noBody(request);
  }
  const modified = Math.floor(source.mtime.getTime() / 1000) * 1000;
  const unmodifiedSince = Date.parse(decided['if-unmodified-since'] ?? '');
  if (!Number.isNaN(unmodifiedSince) && modified > unmodifiedSince) {
    throw problem('PRECONDITION_FAILED', 'The If-Match or If-Unmodified-Since precondition does not hold');
  }
  const validators = () => {
    if (source.seekable) reply.header('accept-ranges', 'bytes');
    reply.header('last-modified', source.mtime.toUTCString()).header('etag', etag);
  };
  const modifiedSince = Date.parse(decided['if-modified-since'] ?? '');
  if (decided['if-none-match'] === undefined && !Number.isNaN(modifiedSince) && modified <= modifiedSince) {
    validators();
    reply.code(304);
    decorate(reply, options);
    return noBody(request);
  }
  let range: { start: number; end: number } | undefined;
  if (source.seekable && decided.range !== undefined && rangeIsFresh(decided['if-range'], etag, modified)) {
    const [start, end] = (rangeFor(decided.range, source.size) ?? '').slice('bytes='.length).split('-');
    if (start !== undefined && end !== undefined) {
      if (end === '') {
        const unsatisfiable = `bytes */${source.size}`;
        reply.header('content-range', unsatisfiable);
        throw problem(
          'RANGE_NOT_SATISFIABLE',
          `No byte of the requested range lies within the content (${unsatisfiable})`,
        );
      }
      range = { start: Number(start), end: Number(end) };
    }
  }
  validators();
  reply.header('content-type', options.contentType ?? 'application/octet-stream');
  if (range) reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${source.size}`);
  reply.header('content-length', range ? range.end - range.start + 1 : source.size);
  decorate(reply, options);
  return request.method === 'HEAD' ? noBody(request) : source.open(range);
}

/** If-Range (RFC 9110 13.1.5), after ownValidator: absent or a date not older than the content keeps the range. */
function rangeIsFresh(ifRange: string | string[] | undefined, etag: string, modified: number): boolean {
  if (typeof ifRange !== 'string') return true;
  if (ifRange.includes('"')) return ifRange.includes(etag);
  const at = Date.parse(ifRange);
  return !Number.isNaN(at) && modified <= at;
}

/**
 * A Range header as this service answers it (RFC 9110 14.1-14.2), read by range-parser, as the
 * one range to send in the form `bytes=first-last`:
 *
 * - one range naming bytes of the content: that range, its last byte clamped to the end, and a
 *   suffix longer than the content (`bytes=-100001` of 100000 bytes) is the whole content (206);
 * - one range naming none (its first byte past the end, or `bytes=-0`): `bytes=<size>-`, which
 *   send() answers 416 with a Content-Range giving the size;
 * - anything else is ignored (undefined: the whole content, 200): another unit, a malformed or
 *   reversed range (`1e3-2e3`, `0x10-0x20`, `5-2`), several ranges (`0-100,50-150`, answered
 *   with the whole content rather than multipart/byteranges), and a suffix of an empty content.
 */
export function rangeFor(header: string, size: number): string | undefined {
  const parsed = parseRange(size, header);
  if (parsed.type !== 'bytes' || (parsed.code & 1) !== 0) return undefined;
  const named = header
    .slice(header.indexOf('=') + 1)
    .split(',')
    .filter((spec) => spec.trim() !== '').length;
  if (named !== 1) return undefined;
  const [only] = parsed.ranges;
  if (only) return `bytes=${only.start}-${only.end}`;
  return (parsed.code & 2) !== 0 ? `bytes=${size}-` : undefined;
}

// fastify answers a HEAD whose handler returned nothing with Content-Length: 0; an empty stream
// keeps the length already set (the size, or none on a 304).
const noBody = (request: FastifyRequest): Readable | undefined =>
  request.method === 'HEAD' ? Readable.from([]) : undefined;

function decorate(reply: FastifyReply, options: StreamOptions): void {
  if (options.contentType !== undefined && reply.statusCode !== 304) reply.header('content-type', options.contentType);
  if (options.cacheControl !== undefined) reply.header('cache-control', options.cacheControl);
  for (const [name, value] of Object.entries(options.headers ?? {})) reply.header(name, value);
}

/**
 * Evaluates the entity-tag conditions against the caller's own strong tag (RFC 9110 13.2.2), and
 * returns the headers left for send() to judge (dates, Range): If-Range naming the current tag is
 * dropped (the range stands), naming another is made one that never matches (the whole is sent).
 */
function ownValidator(request: FastifyRequest, etag: string): 304 | 412 | IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { ...request.headers };
  const ifMatch = headers['if-match'];
  if (ifMatch !== undefined) {
    if (ifMatch.trim() !== '*' && !ifMatch.split(',').some((t) => t.trim() === etag)) return 412;
    delete headers['if-match'];
    delete headers['if-unmodified-since'];
  }
  const ifNoneMatch = headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatchHits(ifNoneMatch, etag)) return 304;
    delete headers['if-none-match'];
    delete headers['if-modified-since'];
  }
  const ifRange = headers['if-range'];
  if (typeof ifRange === 'string' && ifRange.includes('"')) {
    if (ifRange.trim() === etag) delete headers['if-range'];
    else headers['if-range'] = '"stale"';
  }
  return headers;
}
