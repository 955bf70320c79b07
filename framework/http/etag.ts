import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

// RFC 9110 8.8.3: an entity tag is an optional W/ and a quoted string of these characters.
const OPAQUE = /^[\x21\x23-\x7e]*$/;
// One member of an If-None-Match list; the opaque part is what weak comparison compares.
const MEMBER = /(?:W\/)?"([^"]*)"/g;

/**
 * A weak ETag for a value that changes whenever the representation does, such as a row's
 * updated_at. Weak: the bytes of two answers carrying it may differ (a new serialiser, headers),
 * what they mean does not. A Date gives its milliseconds in base 36; text that is not valid in an
 * entity tag is hashed.
 */
export function weakETag(value: Date | string | number): string {
  const text =
    value instanceof Date ? value.getTime().toString(36) : typeof value === 'number' ? value.toString(36) : value;
  const opaque = OPAQUE.test(text) ? text : createHash('sha256').update(text).digest('base64url').slice(0, 27);
  return `W/"${opaque}"`;
}

/**
 * Whether an If-None-Match header names the tag, by RFC 9110's weak comparison (13.1.2): `*`
 * names any current representation; otherwise a comma-separated list of tags, W/ ignored on
 * either side. Malformed members never match.
 */
export function ifNoneMatchHits(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  // The usual case first: a client sending back exactly the tag it was given.
  if (header === etag) return true;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (value.trim() === '*') return true;
  const wanted = opaqueOf(etag);
  for (const match of value.matchAll(MEMBER)) if (match[1] === wanted) return true;
  return false;
}

const opaqueOf = (etag: string): string => etag.replace(/^W\//, '').replace(/^"|"$/g, '');

/**
 * For any read route: sets the ETag header and, when the request's If-None-Match names it on a
 * GET or HEAD, sets 304; the handler then returns `undefined` so nothing is sent after the
 * headers. Answers whether it did.
 *
 *   if (notModified(request, reply, weakETag(row.updatedAt))) return undefined;
 */
export function notModified(request: FastifyRequest, reply: FastifyReply, etag: string): boolean {
  reply.header('etag', etag);
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  if (!ifNoneMatchHits(request.headers['if-none-match'], etag)) return false;
  reply.code(304);
  return true;
}
