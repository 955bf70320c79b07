import sanitizeHtml from 'sanitize-html';
import { renderMarkdown } from '../../framework/markdown/render.ts';

/** How long an excerpt is at most, in characters (code points), the ellipsis included. */
export const EXCERPT_MAX = 200;

// The entities sanitize-html writes in text: read back, so the excerpt is text, not HTML.
const ENTITIES: Readonly<Record<string, string>> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"' };

/**
 * A short plain-text excerpt of a body: its Markdown rendered and sanitised as the public page
 * renders it (so nothing the page would not show reaches the excerpt), every tag then dropped,
 * white space folded, and cut at a word before EXCERPT_MAX characters with an ellipsis. Plain
 * text: whoever shows it (the JSON list, the Atom feed, the index page) escapes it as its format does.
 */
export function excerptOf(body: string): string {
  const html = renderMarkdown(body);
  // Block ends become spaces, so words of two paragraphs do not run together.
  const spaced = html.replace(/<\/(p|h[1-6]|li|blockquote|pre|td|th|tr)>|<br\s*\/?>/gi, ' ');
  const text = sanitizeHtml(spaced, { allowedTags: [], allowedAttributes: {} })
    .replace(/&(amp|lt|gt|quot);/g, (entity) => ENTITIES[entity]!)
    .replace(/\s+/g, ' ')
    .trim();
  const points = [...text];
  if (points.length <= EXCERPT_MAX) return text;
  const cut = points.slice(0, EXCERPT_MAX - 1).join('');
  const atWord = cut.replace(/\s+\S*$/, '');
  return `${(atWord.length > EXCERPT_MAX / 2 ? atWord : cut).trimEnd()}…`;
}
