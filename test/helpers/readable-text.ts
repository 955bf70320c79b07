import { Parser } from 'htmlparser2';

/**
 * The text a person reads on an HTML page: text nodes (outside script and style, and outside
 * hidden inputs, which have none), and the attributes a browser shows or reads out: title,
 * placeholder, alt, aria-label, aria-description, the confirmation htmx asks (hx-confirm), the
 * label a narrow table shows beside each cell (data-label, through CSS), and the caption of a
 * submit input. Not ids, names, URLs, data-code or other machine attributes.
 */
const READ_ATTRIBUTES = ['title', 'placeholder', 'alt', 'aria-label', 'aria-description', 'hx-confirm', 'data-label'];

export function readableText(html: string): string[] {
  const texts: string[] = [];
  let skip = 0;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (name === 'script' || name === 'style') skip++;
        for (const attribute of READ_ATTRIBUTES) if (attributes[attribute]) texts.push(attributes[attribute]);
        if (name === 'input' && (attributes.type === 'submit' || attributes.type === 'button') && attributes.value)
          texts.push(attributes.value);
      },
      ontext(text) {
        if (skip === 0 && text.trim()) texts.push(text.trim());
      },
      onclosetag(name) {
        if (name === 'script' || name === 'style') skip--;
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  return texts;
}

/** What a person should never read under /admin: the patterns, JSON pointers, and the service's event names. */
export function codeLikeText(html: string, eventNames: Iterable<string> = []): string[] {
  const events = [...eventNames].filter((e) => e.includes('.'));
  const rules: [string, (text: string) => boolean][] = [
    ['a code (six or more capitals and underscores)', (t) => /[A-Z_]{6,}/.test(t)],
    ['validator wording', (t) => /must match|must not have|must have required/i.test(t)],
    ['a regular expression', (t) => /\^\S*\$/.test(t)],
    ['an HTTP status', (t) => /\b\d{3} [A-Z]/.test(t)],
    ['a JSON pointer', (t) => /(^|\s)\/(body|query|params)\//.test(t)],
    [
      'an event name',
      (t) => events.some((e) => new RegExp(`(^|[^\\w.@])${e.replace(/\./g, '\\.')}($|[^\\w.])`).test(t)),
    ],
  ];
  return readableText(html).flatMap((text) =>
    rules.filter(([, test]) => test(text)).map(([what]) => `${what}: ${JSON.stringify(text.slice(0, 160))}`),
  );
}
