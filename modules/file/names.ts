/** A media type: type/subtype (RFC 9110 tokens), optionally with parameters; at most 255 characters. */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const PARAMETER = `\\s*;\\s*${TOKEN}=(?:${TOKEN}|"[^"\\\\\\r\\n]*")`;
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:${PARAMETER})*$`);

export const MEDIA_TYPE_MAX = 255;

export const isMediaType = (value: string): boolean => value.length <= MEDIA_TYPE_MAX && MEDIA_TYPE.test(value);

/** Unicode control (Cc) and format (Cf) characters: C0/C1 controls, bidi overrides and isolates (U+202E), zero-width characters. */
const INVISIBLE = /[\p{Cc}\p{Cf}]/gu;

/**
 * The part's file name, kept for display and Content-Disposition only (never a path): the last
 * path segment, without control and format characters (so no bidi override makes a name ending
 * in `.exe` display as one ending in `.jpg`), at most 255 characters; "file" when nothing is left.
 */
export function sanitiseName(raw: string | undefined): string {
  const last = (raw ?? '').split(/[\\/]/).pop() ?? '';
  const clean = last.replace(INVISIBLE, '').trim();
  const chars = [...clean].slice(0, 255).join('');
  return chars === '' || chars === '.' || chars === '..' ? 'file' : chars;
}

/**
 * RFC 6266 / 8187: how a download is shown, with the name percent-encoded as UTF-8. `inline` lets
 * a browser show a renderable file and still names it, so a saved copy keeps its name; `attachment`
 * makes any other type a download.
 */
export function contentDisposition(kind: 'inline' | 'attachment', name: string): string {
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename*=UTF-8''${encoded}`;
}
