import type { FastifyReply } from 'fastify';

const FRAME_ANCESTORS = "frame-ancestors 'none'";

/**
 * Every HTML answer refuses to be framed (clickjacking): `X-Frame-Options: DENY` for the browsers
 * that read only that, and `frame-ancestors 'none'` in its Content-Security-Policy, added to the
 * policy a page set itself (the admin shell, the reset page) or as the whole policy of a page that
 * set none (the OpenAPI viewer at /api/v1/docs, whose own scripts and styles it leaves alone).
 * A download (Content-Disposition: attachment) is no page: its headers stay exactly those of
 * SPEC Files rule 5, whatever type the uploader declared.
 */
export function refuseFramingOfHtml(reply: FastifyReply): void {
  const type = String(reply.getHeader('content-type') ?? '')
    .trim()
    .toLowerCase();
  if (!type.startsWith('text/html')) return;
  if (/^\s*attachment\b/i.test(String(reply.getHeader('content-disposition') ?? ''))) return;
  reply.header('x-frame-options', 'DENY');
  const policy = reply.getHeader('content-security-policy');
  if (policy === undefined) {
    reply.header('content-security-policy', FRAME_ANCESTORS);
  } else if (!/(^|;)\s*frame-ancestors\s/i.test(String(policy))) {
    reply.header('content-security-policy', `${String(policy).replace(/[\s;]*$/, '')}; ${FRAME_ANCESTORS}`);
  }
}
