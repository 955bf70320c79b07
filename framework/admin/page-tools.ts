import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { ASSET_PREFIX } from './assets.ts';

/**
 * The script of the hand-written pages' small tools (assets/page-tools.js): an upload form's
 * progress and a Copy button for a link. A page that has either loads it; each works without it.
 */
export const PAGE_TOOLS_URL = `${ASSET_PREFIX}/page-tools.js`;

/**
 * Serves assets/page-tools.js from the shell's asset folder (the only place the shell's
 * Content-Security-Policy takes scripts from), read once at boot, with a strong ETag and no-cache
 * like the other assets.
 */
export function registerPageTools(app: FastifyInstance): void {
  const body = readFileSync(fileURLToPath(new URL('./assets/page-tools.js', import.meta.url)));
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  app.get(PAGE_TOOLS_URL.slice(app.prefix.length), { schema: { hide: true } }, async (request, reply) => {
    reply.header('etag', etag).header('cache-control', 'public, no-cache').type('text/javascript; charset=utf-8');
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.send(body);
  });
}
