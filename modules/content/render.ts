/**
 * The public page's Markdown renderer lives in the framework (framework/markdown/render.ts), so
 * the admin shell's detail pages and previews render Markdown fields with the same policy without
 * the framework importing a module. Re-exported here under its old name for the module's readers.
 */
export { LINK_REL, renderMarkdown } from '../../framework/markdown/render.ts';
