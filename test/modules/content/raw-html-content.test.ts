import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionFormToken } from '../../../framework/access/form-token.ts';
import { renderMarkdown } from '../../../framework/markdown/render.ts';
import { signInAs } from '../../helpers/app.ts';
import { command, contentSite, createContent, PUBLIC, type ContentSite } from './support.ts';

/**
 * Issue 41, point 8 ("Content"): a body `<script>alert(1)</script>` showed "alert(1)" on the public
 * page, in the public JSON and in the admin: Markdown left the tags out but read what stood between
 * them as text. Raw HTML is left out, and so is the content of script, style, textarea and
 * template, by the one renderer all three use (framework/markdown/render.ts).
 */
describe('renderMarkdown leaves out the content of script, style, textarea and template', () => {
  it.each([
    ['a line of its own', '<script>alert(1)</script>', ''],
    ['inline, between words', 'Hello <script>alert(1)</script> world', '<p>Hello  world</p>\n'],
    ['a style sheet', 'a <style>p{color:red}</style> b', '<p>a  b</p>\n'],
    ['a textarea', 'x <textarea>typed</textarea> y', '<p>x  y</p>\n'],
    ['a template', 'x <template>hidden</template> y', '<p>x  y</p>\n'],
    ['any letter case', 'Hi <ScRiPt>alert(1)</sCrIpT> there', '<p>Hi  there</p>\n'],
    ['a template over paragraphs', '<template>\n\nhidden para\n\n</template>\n\nvisible', '<p>visible</p>\n'],
    ['closed in a later paragraph', '<template>\n\nfoo </template> bar', '<p> bar</p>\n'],
    [
      'in a list item',
      '- item <script>evil()</script> ok\n- second',
      '<ul>\n<li>item  ok</li>\n<li>second</li>\n</ul>\n',
    ],
    ['never closed: the rest goes too', 'a <script>never closed\n\nmore text', '<p>a </p>\n'],
  ])('%s', (_name, body, html) => {
    expect(renderMarkdown(body)).toBe(html);
  });

  it('in a table cell, and inside emphasis', () => {
    const table = renderMarkdown('| a | b |\n|---|---|\n| <script>x()</script> | y |');
    expect(table).not.toContain('x()');
    expect(table).toContain('<td>y</td>');
    expect(renderMarkdown('*a <script>b()</script> c*')).toBe('<p><em>a  c</em></p>\n');
  });

  it('keeps the text of other raw HTML (its tags left out), and code that shows tags', () => {
    expect(renderMarkdown('keep <b>bold</b> and <span>span</span>')).toBe('<p>keep bold and span</p>\n');
    expect(renderMarkdown('`<script>code</script>` as code')).toBe(
      '<p><code>&lt;script&gt;code&lt;/script&gt;</code> as code</p>\n',
    );
    expect(renderMarkdown('<scripts>not a script element</scripts>')).toBe('<p>not a script element</p>\n');
  });
});

describe('the public page, the public JSON and the admin show none of it', () => {
  let site: ContentSite;
  beforeAll(async () => {
    site = await contentSite('rawhtml');
  });
  afterAll(async () => {
    await site?.app.close();
  });

  it('a published body with a script, a style, a textarea and a template', async () => {
    const body =
      'Before <script>alert(1)</script> after.\n\n<style>body{display:none}</style>\n\nField <textarea>secret words</textarea> end.\n\n<template>inert words</template>\n\nLast line.';
    const item = await createContent(site, { body });
    expect((await command(site, item.id, 'publish')).status).toBe(200);
    const http = site.app.http(site.host);
    const json = await http.get(`${PUBLIC}/${item.slug}`);
    expect(json.status).toBe(200);
    const page = await http.get(`/p/${item.slug}`);
    expect(page.status).toBe(200);
    const admin = await signInAs(site.app, site.tenant, ['*']);
    const detail = await http.get(`/admin/content/contents/${item.id}`).set('Cookie', admin.cookie);
    expect(detail.status).toBe(200);
    // The edit form posted back for a preview (nothing saved): the form again, with the body rendered.
    const preview = await http
      .post(`/admin/content/contents/${item.id}/edit`)
      .set('Cookie', admin.cookie)
      .type('form')
      .send({
        csrf: sessionFormToken(admin.rawSessionId),
        _preview: 'body',
        slug: item.slug,
        title: 'A title',
        kind: 'page',
        body,
      });
    expect(preview.status).toBe(200);
    // The form keeps the source in its textarea; the preview is the rendered part.
    const rendered = /<div class="markdown">([\s\S]*?)<\/div>/.exec(preview.text)?.[1] ?? '';
    // The detail page's History section quotes the body's source as the API keeps it, as text (as
    // the edit form's textarea does): escaped, never markup. The rest of the page shows the rendering.
    const history = /<section class="history"[\s\S]*?<\/section>/.exec(detail.text)?.[0] ?? '';
    expect(history).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(history).not.toMatch(/<(script|style|textarea|template)\b/);
    const shown = detail.text.replace(history, '');
    for (const [where, html] of [
      ['public JSON', json.body.body as string],
      ['public page', page.text],
      ['admin detail page', shown],
      ['admin preview', rendered],
    ] as const) {
      for (const hidden of ['alert(1)', 'display:none', 'secret words', 'inert words'])
        expect(html, `${where}: ${hidden}`).not.toContain(hidden);
      expect(html, where).toContain('Before');
      expect(html, where).toContain('Last line.');
    }
    // The API keeps the body as written.
    const stored = await http.get(`/api/v1/content/contents/${item.id}`).set('Cookie', site.cookie);
    expect(stored.body.body).toBe(body);
  });
});
