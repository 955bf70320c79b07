import { Marked, type Token, type Tokens } from 'marked';
import sanitizeHtml from 'sanitize-html';

/**
 * Markdown to the HTML a public reader receives, on every read (docs/content.md):
 * 1. marked with GitHub-flavoured Markdown; raw HTML in the body (block or inline) renders as
 *    nothing, so what a body's author typed as HTML never reaches the page; nor does what stands
 *    between the tags of an element whose content is no text for a reader (script, style,
 *    textarea, template: withoutRawContent), though Markdown reads it as text;
 * 2. sanitize-html with a user-generated-content policy: an allow-list of tags and attributes,
 *    links and images only over http(s) (mailto for links), so script, event handlers and
 *    javascript:, vbscript: and data: URLs are gone whatever their spelling; a protocol-relative
 *    link or image (`//host/x`, and the `\\host` spellings browsers read the same way) is
 *    rewritten to https://host/x; every link gets rel="nofollow ugc noopener".
 */

/** Elements whose content goes with their tags: code, a style sheet, a form's text, an inert template. */
const CONTENT_ELEMENTS = ['script', 'style', 'textarea', 'template'];
const CONTENT_TAG = new RegExp(`<(/?)(${CONTENT_ELEMENTS.join('|')})(?=[\\s/>]|$)`, 'gi');

/** The element left open after a piece of raw HTML, given the one open before it (undefined: none). */
function openAfter(html: string, open: string | undefined): string | undefined {
  let current = open;
  for (const [, closing, name] of html.matchAll(CONTENT_TAG)) {
    const element = name!.toLowerCase();
    if (current === undefined && closing === '') current = element;
    else if (current === element && closing === '/') current = undefined;
  }
  return current;
}

/** A token's lists of child tokens (its inline or block content, a list's items, a table's cells), each replaceable. */
function childLists(token: Token): { get: () => Token[]; set: (tokens: Token[]) => void }[] {
  const holders: { get: () => Token[]; set: (tokens: Token[]) => void }[] = [];
  const of = (owner: { tokens: Token[] }) => ({ get: () => owner.tokens, set: (t: Token[]) => (owner.tokens = t) });
  if ('tokens' in token && Array.isArray(token.tokens)) holders.push(of(token as { tokens: Token[] }));
  if (token.type === 'list') {
    const list = token as Tokens.List;
    holders.push({ get: () => list.items, set: (items) => (list.items = items as Tokens.ListItem[]) });
  }
  if (token.type === 'table') {
    const table = token as Tokens.Table;
    for (const cell of [...table.header, ...table.rows.flat()]) holders.push(of(cell));
  }
  return holders;
}

/**
 * The tokens with the content of a script, style, textarea or template element left out: Markdown
 * reads `<script>alert(1)</script>` in a line as two inline HTML tags (rendered as nothing) around
 * the text "alert(1)", which would otherwise reach the page. Walked in document order across
 * blocks and inline content, so an element opened in one paragraph and closed in a later one
 * takes everything between; one never closed takes the rest of the body, as a browser would.
 */
function withoutRawContent(tokens: Token[], state: { open: string | undefined }): Token[] {
  const kept: Token[] = [];
  for (const token of tokens) {
    if (token.type === 'html') {
      state.open = openAfter(token.raw, state.open);
      kept.push(token);
      continue;
    }
    const openBefore = state.open;
    for (const holder of childLists(token)) holder.set(withoutRawContent(holder.get(), state));
    // Wholly inside such an element: gone. A token in which it closes keeps what follows the close.
    if (openBefore !== undefined && state.open !== undefined) continue;
    kept.push(token);
  }
  return kept;
}

const markdown = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html: () => '',
  },
  hooks: {
    processAllTokens: (tokens) => withoutRawContent(tokens, { open: undefined }),
  },
});

export const LINK_REL = 'nofollow ugc noopener';

// A URL that starts with two slashes or backslashes in any mix names a host with the page's scheme.
const PROTOCOL_RELATIVE = /^[\s\u0000-\u001f]*[\\/]{2}/;

const withOrigin = (url: string | undefined): string | undefined =>
  url !== undefined && PROTOCOL_RELATIVE.test(url) ? `https://${url.replace(PROTOCOL_RELATIVE, '')}` : url;

const defined = (attribs: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(attribs).filter((entry): entry is [string, string] => entry[1] !== undefined));

const POLICY: sanitizeHtml.IOptions = {
  allowedTags: [
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'p',
    'br',
    'hr',
    'blockquote',
    'pre',
    'code',
    'em',
    'strong',
    'del',
    's',
    'ul',
    'ol',
    'li',
    'a',
    'img',
    'table',
    'thead',
    'tbody',
    'tr',
    'th',
    'td',
  ],
  allowedAttributes: {
    a: ['href', 'title', 'rel'],
    img: ['src', 'alt', 'title'],
    ol: ['start'],
    th: ['align'],
    td: ['align'],
    code: ['class'],
  },
  allowedClasses: { code: ['language-*'] },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['http', 'https'] },
  allowedSchemesAppliedToAttributes: ['href', 'src'],
  // Rewritten to https below; one that slipped through is dropped rather than served.
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
  transformTags: {
    a: (tagName, attribs) => ({
      tagName,
      attribs: defined({ ...attribs, href: withOrigin(attribs.href), rel: LINK_REL }),
    }),
    img: (tagName, attribs) => ({ tagName, attribs: defined({ ...attribs, src: withOrigin(attribs.src) }) }),
  },
};

/**
 * A page that already has its own h1 (the admin's record page, with the record's title) shows a
 * body's headings that many levels down, so that `# Heading` in the body is not a second h1 of the
 * page (capped at h6).
 */
export interface MarkdownPlacement {
  headingOffset?: number;
}

/** The admin shell's pages: h1 is the page's title and h2 its sections, so a body's headings start at h3. */
export const ADMIN_MARKDOWN: MarkdownPlacement = { headingOffset: 2 };

const policies = new Map<number, sanitizeHtml.IOptions>([[0, POLICY]]);

function policyFor(headingOffset: number): sanitizeHtml.IOptions {
  let policy = policies.get(headingOffset);
  if (!policy) {
    const shifted = Object.fromEntries(
      [1, 2, 3, 4, 5, 6].map((level) => [`h${level}`, `h${Math.min(6, level + headingOffset)}`]),
    );
    policy = { ...POLICY, transformTags: { ...POLICY.transformTags, ...shifted } };
    policies.set(headingOffset, policy);
  }
  return policy;
}

export function renderMarkdown(body: string, placement: MarkdownPlacement = {}): string {
  return sanitizeHtml(markdown.parse(body) as string, policyFor(Math.max(0, Math.trunc(placement.headingOffset ?? 0))));
}
