import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Parser } from 'htmlparser2';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { GALLERY } from '../../framework/admin/pages/gallery-data.ts';

const COMPONENTS_DIR = fileURLToPath(new URL('../../templates/admin/components/', import.meta.url));
const componentNames = () =>
  readdirSync(COMPONENTS_DIR)
    .filter((f) => f.endsWith('.eta'))
    .map((f) => f.slice(0, -'.eta'.length))
    .sort();

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  const acme = await createCustomer(app, 'acme');
  cookie = (await signInAs(app, acme, [])).cookie;
});
afterAll(async () => {
  await app?.close();
});

/** The gallery's sections: component name → the HTML rendered inside its sample box (as text). */
function sections(html: string): Map<string, string> {
  const found = new Map<string, string>();
  let current: string | undefined;
  let depth = 0;
  let text = '';
  let tags = 0;
  const parser = new Parser({
    onopentag(_name, attrs) {
      if (current) {
        depth++;
        tags++;
      } else if (attrs['data-component']) {
        current = attrs['data-component'];
        depth = 0;
        text = '';
        tags = 0;
      }
    },
    ontext(value) {
      if (current) text += value;
    },
    onclosetag() {
      if (!current) return;
      if (depth === 0) {
        found.set(current, `${tags} elements: ${text.replace(/\s+/g, ' ').trim()}`);
        current = undefined;
      } else depth--;
    },
  });
  parser.write(html);
  parser.end();
  return found;
}

describe('GET /admin/_gallery: every UI component rendered once', () => {
  it('renders every partial of templates/admin/components/, each once (a new partial without a sample fails here)', async () => {
    const res = await app.http('acme.localhost').get('/admin/_gallery').set('Cookie', cookie);
    expect(res.status).toBe(200);
    const shown = sections(res.text);
    expect([...shown.keys()].sort()).toEqual(componentNames());
    expect(GALLERY.map((s) => s.component).sort()).toEqual(componentNames());
    // Rendered, not just named: each sample box holds the component's own markup.
    for (const [name, content] of shown) expect(content, name).toMatch(/^[1-9]\d* elements/);
  });

  it('is for signed-in people: an anonymous browser is sent to the login page', async () => {
    const res = await app.http('acme.localhost').get('/admin/_gallery');
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/admin/login?next=%2Fadmin%2F_gallery');
  });
});
