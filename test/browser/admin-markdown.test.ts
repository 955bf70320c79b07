import { beforeAll, describe, expect, it } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  hasChromium,
  useBrowserApp,
  seriousViolations,
  signedInSession,
  type SignedInSession,
  warnNoChromium,
} from './admin-pages-setup.ts';

warnNoChromium('test/browser/admin-markdown.test.ts');

/**
 * Issue 35, point 3: Markdown fields (Markdown() in the entity's fields: a content body, a task
 * description) are rendered on detail pages with the public page's renderer, sanitised; forms
 * preview them with htmx, and without JavaScript with a Preview button posting the form back.
 */

const t = useBrowserApp();
let acme: TenantRef;
let admin: { id: string; email: string; password: string };
let cookie: string;
let asAdmin: SignedInSession;

const ACME = 'acme.localhost';
const HOSTILE = [
  '# Opening hours',
  '',
  'We are **open** on weekdays. [Map](https://example.com/map) [bad](javascript:alert(1))',
  '',
  '<script>window.hacked = true</script><img src=x onerror="window.hacked = true">',
].join('\n');

async function newContent(slug: string, body: string): Promise<string> {
  const res = await t.app
    .http(ACME)
    .post('/api/v1/content/contents')
    .set('Cookie', cookie)
    .send({ slug, title: `Page ${slug}`, kind: 'page', body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

const storedBody = async (id: string): Promise<string> =>
  (await t.app.http(ACME).get(`/api/v1/content/contents/${id}`).set('Cookie', cookie).expect(200)).body.body;

describe.skipIf(!hasChromium)('Markdown fields in the admin shell', () => {
  beforeAll(async () => {
    acme = await createCustomer(t.app, 'acme', ACME);
    admin = await addUser(t.app, acme, { roles: ['admin'], password: 'acme admin password' });
    const login = await t.app
      .http(ACME)
      .post('/api/v1/auth/login')
      .send({ email: admin.email, password: admin.password });
    cookie = login.headers['set-cookie']![0]!.split(';', 1)[0]!;
    asAdmin = await signedInSession(t.browser, t.origin(ACME), admin);
  });

  it('a detail page renders the body as HTML, sanitised: no script, no event handler, no javascript: link', async () => {
    const id = await newContent('hours', HOSTILE);
    const taskRes = await t.app
      .http(ACME)
      .post('/api/v1/task/tasks')
      .set('Cookie', cookie)
      .send({ title: 'Steps', priority: 'low', deadline: '2099-01-01T00:00:00Z', description: '1. *look*\n2. fix' });
    const { context, page } = await asAdmin();
    try {
      await page.goto(`${t.origin(ACME)}/admin/content/contents/${id}`);
      const rendered = page.locator('dl.values .markdown');
      // The body's `# Opening hours` sits under the page's own h1 (the record) and h2s: it is an h3.
      expect(await rendered.locator('h3').textContent()).toBe('Opening hours');
      expect(await page.locator('h1').count()).toBe(1);
      expect(await rendered.locator('strong').textContent()).toBe('open');
      expect(await rendered.locator('a[href="https://example.com/map"]').getAttribute('rel')).toBe(
        'nofollow ugc noopener',
      );
      expect(await rendered.locator('script, img[onerror], a[href^="javascript"]').count()).toBe(0);
      expect(await page.evaluate(() => (globalThis as unknown as { hacked?: boolean }).hacked)).toBeUndefined();
      expect(await page.locator('dl.values').textContent()).not.toContain('**open**');
      expect(await seriousViolations(page)).toEqual([]);

      await page.goto(`${t.origin(ACME)}/admin/task/tasks/${taskRes.body.id}`);
      expect(await page.locator('dl.values .markdown ol li em').textContent()).toBe('look');
    } finally {
      await context.close();
    }
  });

  it('with htmx the Preview button shows the typed text rendered beside the field, and saves nothing', async () => {
    const id = await newContent('preview-js', 'Old text');
    const { context, page } = await asAdmin();
    try {
      await page.goto(`${t.origin(ACME)}/admin/content/contents/${id}/edit`);
      await page.fill('textarea[name=body]', 'Now **bold** <script>window.hacked = true</script>');
      // htmx posts the form to its own address (nothing saved) and swaps in the form it answers.
      const preview = page.waitForResponse(
        (r) =>
          new URL(r.url()).pathname === `/admin/content/contents/${id}/edit` &&
          r.request().method() === 'POST' &&
          r.request().headers()['hx-request'] === 'true',
      );
      await page.click('button[name=_preview][value=body]');
      expect((await preview).status()).toBe(200);
      await page.waitForSelector('#field-body-preview strong');
      expect(await page.textContent('#field-body-preview strong')).toBe('bold');
      expect(await page.locator('#field-body-preview script').count()).toBe(0);
      // Still the edit form, with the typed text, and nothing stored.
      expect(new URL(page.url()).pathname).toBe(`/admin/content/contents/${id}/edit`);
      expect(await page.inputValue('textarea[name=body]')).toContain('Now **bold**');
      expect(await storedBody(id)).toBe('Old text');
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('without JavaScript the Preview button posts the form back with the preview and the typed text; Save then stores it', async () => {
    const id = await newContent('preview-plain', 'Old text');
    const { context, page } = await asAdmin({ javaScriptEnabled: false });
    try {
      await page.goto(`${t.origin(ACME)}/admin/content/contents/${id}/edit`);
      await page.fill('textarea[name=body]', '## Plain\n\n*slanted*');
      await page.click('button[name=_preview][value=body]');
      expect(new URL(page.url()).pathname).toBe(`/admin/content/contents/${id}/edit`);
      expect(await page.textContent('#field-body-preview h4')).toBe('Plain');
      expect(await page.textContent('#field-body-preview em')).toBe('slanted');
      // A form posts its text's line breaks as CRLF (HTML's form encoding); the text is otherwise as typed.
      expect((await page.inputValue('textarea[name=body]')).replaceAll('\r\n', '\n')).toBe('## Plain\n\n*slanted*');
      expect(await storedBody(id)).toBe('Old text');

      await Promise.all([
        page.waitForURL(`${t.origin(ACME)}/admin/content/contents/${id}`),
        page.click('#resource-form .actions button[type=submit]:not([name])'),
      ]);
      expect((await storedBody(id)).replaceAll('\r\n', '\n')).toBe('## Plain\n\n*slanted*');
    } finally {
      await context.close();
    }
  });
});
