export const DEFAULT_LANDING = '/admin';

/** The longest `next` kept, as it is sent (percent-encoded): the login route's query takes no longer one. */
export const NEXT_PATH_MAX = 2000;

/**
 * What a local path may hold as it is: RFC 3986's unreserved and reserved characters. Everything
 * else (a space, a quote, `<`, a non-ASCII letter) is percent-encoded as UTF-8, and a `%` that
 * starts no escape is encoded too, so the result is plain ASCII that any Location header carries
 * and that a browser decodes back to what was asked for.
 */
const KEPT = /[A-Za-z0-9\-._~!$&'()*+,;=:@/?#[\]]/;

/**
 * A local path on this host, or the default, percent-encoded so it can be sent as a Location
 * header as it is. "//evil.test" and "/\evil.test" are refused because browsers read both as
 * another host; control characters because some clients strip them first; a string that is no
 * well-formed Unicode (a lone surrogate) because it has no encoding. An escape already in the path
 * is kept, so encoding what this answers changes nothing (`/%E2%82%AC` and `/€` land alike).
 * The limit holds for the path as encoded, so what this answers always fits the login route's
 * `next` again (the sign-in page's form posts it back there): 700 "€" are 6,300 characters sent.
 */
export function safeNextPath(next: unknown): string {
  if (typeof next !== 'string' || next.length === 0 || next.length > NEXT_PATH_MAX) return DEFAULT_LANDING;
  if (!next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return DEFAULT_LANDING;
  if (/[\u0000-\u001f\u007f\\]/.test(next) || !next.isWellFormed()) return DEFAULT_LANDING;
  let encoded = '';
  for (const char of next) {
    encoded += KEPT.test(char) ? char : encodeURIComponent(char);
  }
  // A "%" that starts no escape was encoded as %25 above; one that starts an escape is kept.
  const sent = encoded.replace(/%25(?=[0-9A-Fa-f]{2})/g, '%');
  return sent.length > NEXT_PATH_MAX ? DEFAULT_LANDING : sent;
}
