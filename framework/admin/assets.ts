import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

/** Where the shell's static files are served; the paths are stable (templates, docs and tests name them). */
export const ASSET_PREFIX = '/admin/_assets';
export const HTMX_URL = `${ASSET_PREFIX}/htmx.min.js`;
export const CSS_URL = `${ASSET_PREFIX}/admin.css`;
/** The shell's icon, linked from every page (an SVG: one small file for every size). */
export const FAVICON_URL = `${ASSET_PREFIX}/favicon.svg`;
/** The script that follows a signed-in page's live changes on one stream (docs/admin.md, "Live changes"). */
export const LIVE_URL = `${ASSET_PREFIX}/live.js`;

/** The query parameter that names a file's version in the link a page gives (`?v=<hash of its content>`). */
export const VERSION_PARAMETER = 'v';
/** A link naming the file's current version: its content can never change under it. */
export const VERSIONED_CACHE_CONTROL = 'public, max-age=31536000, immutable';
/** The stable path, or an old page's version: kept, but asked again each time (a 304 while unchanged). */
export const REVALIDATED_CACHE_CONTROL = 'public, no-cache';

/** One of the shell's static files, read once at boot. */
export interface ShellFile {
  /** The stable path it is served at. */
  path: string;
  /** The link a page gives: the path with the content's hash as `?v=`. */
  href: string;
  version: string;
  etag: string;
  type: string;
  body: Buffer;
}

/** Reads a file and hashes it: its ETag and the version its links name come from the same digest. */
export function shellFile(path: string, file: string, type: string): ShellFile {
  const body = readFileSync(file);
  const digest = createHash('sha256').update(body).digest('base64url');
  const version = digest.slice(0, 16);
  return {
    path,
    href: `${path}?${VERSION_PARAMETER}=${version}`,
    version,
    etag: `"${digest.slice(0, 27)}"`,
    type,
    body,
  };
}

/** A file of the shell's own folder (framework/admin/assets/). */
export const ownAsset = (name: string): string => fileURLToPath(new URL(`./assets/${name}`, import.meta.url));

const JAVASCRIPT = 'text/javascript; charset=utf-8';
const require = createRequire(import.meta.url);

/**
 * htmx 4 straight from node_modules (no copy, no build step), the one hand-written style sheet, the
 * script of live changes and the icon: read and hashed once, when the shell's code is loaded at
 * boot, so every page links the same versioned URLs without hashing anything per request.
 */
export const SHELL_FILES = {
  htmx: shellFile(HTMX_URL, require.resolve('htmx.org/dist/htmx.min.js'), JAVASCRIPT),
  css: shellFile(CSS_URL, ownAsset('admin.css'), 'text/css; charset=utf-8'),
  favicon: shellFile(FAVICON_URL, ownAsset('favicon.svg'), 'image/svg+xml'),
  live: shellFile(LIVE_URL, ownAsset('live.js'), JAVASCRIPT),
} as const satisfies Record<string, ShellFile>;

/**
 * Serves a shell file at its stable path, in the /admin scope. Every page links it with its
 * content's hash (`href`), and that URL is cached for a year and never asked again: a page's
 * navigation to the next sends no request for it (four conditional requests, four round trips a
 * page, when every answer said no-cache). A deploy that changes the file changes the link. The
 * bare path, or a version that is not the current one (a page rendered before a deploy), is
 * answered as before: no-cache with the strong ETag, a 304 on a match, so an old version's URL
 * never holds the new content for a year.
 */
export function serveShellFile(app: FastifyInstance, file: ShellFile): void {
  // Registered in the /admin scope: the route's own path lies under the scope's prefix.
  app.get(file.path.slice(app.prefix.length), { schema: { hide: true } }, async (request, reply) => {
    const asked = (request.query as Record<string, unknown>)[VERSION_PARAMETER];
    reply
      .header('etag', file.etag)
      .header('cache-control', asked === file.version ? VERSIONED_CACHE_CONTROL : REVALIDATED_CACHE_CONTROL)
      .type(file.type);
    if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
    return reply.send(file.body);
  });
}

export function registerAssets(app: FastifyInstance): void {
  for (const file of Object.values(SHELL_FILES)) serveShellFile(app, file);
}
