import type { FastifyInstance } from 'fastify';
import { ASSET_PREFIX, ownAsset, serveShellFile, shellFile } from './assets.ts';

/**
 * The script of the hand-written pages' small tools (assets/page-tools.js): an upload form's
 * progress and a Copy button for a link. A page that has either loads it; each works without it.
 */
export const PAGE_TOOLS_URL = `${ASSET_PREFIX}/page-tools.js`;

const PAGE_TOOLS = shellFile(PAGE_TOOLS_URL, ownAsset('page-tools.js'), 'text/javascript; charset=utf-8');

/** The link a page gives to the script: with its content's hash, cached by the browser (assets.ts). */
export const PAGE_TOOLS_HREF = PAGE_TOOLS.href;

/**
 * Serves assets/page-tools.js from the shell's asset folder (the only place the shell's
 * Content-Security-Policy takes scripts from), read once at boot, like the other assets.
 */
export function registerPageTools(app: FastifyInstance): void {
  serveShellFile(app, PAGE_TOOLS);
}
