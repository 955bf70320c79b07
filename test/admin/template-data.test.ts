import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderTemplate } from '../../framework/admin/render.ts';

// Issue 42, point 1: a component sees only the data its template hands it. Eta's include merges
// the including page's data under the component's, so a page's `items` became its notice's list
// ("[object Object]" once per file). The shell includes through component() (render.ts), never include().

const TEMPLATES = fileURLToPath(new URL('../../templates/admin', import.meta.url));

const templateFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? templateFiles(join(dir, entry.name))
      : entry.name.endsWith('.eta')
        ? [join(dir, entry.name)]
        : [],
  );

describe('components get their own data', () => {
  it('no admin template includes another with eta’s include, which hands over the page’s data', () => {
    const files = templateFiles(TEMPLATES);
    expect(files.length).toBeGreaterThan(20);
    const including = files.filter((file) => /\binclude(Async)?\s*\(/.test(readFileSync(file, 'utf8')));
    expect(including.map((file) => relative(TEMPLATES, file))).toEqual([]);
  });

  it('a page whose own data has items renders its notice with none of them', () => {
    const html = renderTemplate('./admin/pages/notifications', {
      notice: 'All your notifications are marked read.',
      items: [
        {
          id: 'n1',
          title: 'First',
          body: 'About',
          link: '/admin',
          at: { text: '1 Jan 2026, 00:00 UTC', iso: '2026-01-01T00:00:00.000Z' },
          unread: false,
        },
      ],
      anyUnread: false,
      firstPage: true,
      base: '/admin/notification/notifications',
      csrfField: 'csrf',
      csrf: 'x',
      pager: { summary: '' },
    });
    const alert = /<div class="alert[^>]*>[\s\S]*?<\/div>/.exec(html)?.[0] ?? '';
    expect(alert).toContain('All your notifications are marked read.');
    expect(alert).not.toContain('<li');
    expect(html).not.toContain('[object Object]');
  });
});
