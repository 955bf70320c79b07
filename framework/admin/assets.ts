import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

/** Where the shell's static files are served; the URLs are stable (templates and tests use them). */
export const ASSET_PREFIX = '/admin/_assets';
export const HTMX_URL = `${ASSET_PREFIX}/htmx.min.js`;
export const CSS_URL = `${ASSET_PREFIX}/admin.css`;
/** The shell's icon, linked from every page (an SVG: one small file for every size). */
export const FAVICON_URL = `${ASSET_PREFIX}/favicon.svg`;
/** The script that follows a signed-in page's live changes on one stream (docs/admin.md, "Live changes"). */
export const LIVE_URL = `${ASSET_PREFIX}/live.js`;

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function asset(path: string, type: string): Asset {
  const body = readFileSync(path);
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

/**
 * htmx 4 straight from node_modules (no copy, no build step), the one hand-written style sheet, the
 * script of live changes and the icon.
 * Both are read once at boot; answers carry a strong ETag so a browser revalidates with a 304, and
 * no-cache so a deploy's new file is picked up at once.
 */
export function registerAssets(app: FastifyInstance): void {
  const require = createRequire(import.meta.url);
  const files: Record<string, Asset> = {
    [HTMX_URL]: asset(require.resolve('htmx.org/dist/htmx.min.js'), 'text/javascript; charset=utf-8'),
    [CSS_URL]: asset(fileURLToPath(new URL('./assets/admin.css', import.meta.url)), 'text/css; charset=utf-8'),
    [FAVICON_URL]: asset(fileURLToPath(new URL('./assets/favicon.svg', import.meta.url)), 'image/svg+xml'),
    [LIVE_URL]: asset(fileURLToPath(new URL('./assets/live.js', import.meta.url)), 'text/javascript; charset=utf-8'),
  };
  for (const [url, file] of Object.entries(files)) {
    // Registered in the /admin scope: the route's own path lies under the scope's prefix.
    app.get(url.slice(app.prefix.length), { schema: { hide: true } }, async (request, reply) => {
      reply.header('etag', file.etag).header('cache-control', 'public, no-cache').type(file.type);
      if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
      return reply.send(file.body);
    });
  }
}
