import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENTS, contentSite, createContent, outbox, storedRow, uniqueSlug, type ContentSite } from './support.ts';
import { signInAs } from '../../helpers/app.ts';

let site: ContentSite;

beforeAll(async () => {
  site = await contentSite('fields');
});
afterAll(async () => {
  await site?.app.close();
});

const post = (body: Record<string, unknown>) =>
  site.app
    .http(site.host)
    .post(CONTENTS)
    .set('Cookie', site.cookie)
    .send({ title: 'T', kind: 'post', body: '', ...body });
const patch = (id: string, body: Record<string, unknown>) =>
  site.app.http(site.host).patch(`${CONTENTS}/${id}`).set('Cookie', site.cookie).send(body);

function expectProblem(
  res: { status: number; headers: Record<string, string>; body: { code?: string } },
  status: number,
  code: string,
) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe(code);
}

describe('slug: stored normalised (NFKC, trimmed, lower-cased), 1–100 characters of the grammar', () => {
  it('stores a slug in its normalised form, on create and on PATCH', async () => {
    const base = uniqueSlug('norm');
    // Full-width letters and digits are the same slug after NFKC; white space is trimmed; capitals lowered.
    const created = await post({ slug: `  ${base.toUpperCase()}-ＡＢＣ１  ` });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.slug).toBe(`${base}-abc1`);
    expect((await storedRow(site, created.body.id)).slug).toBe(`${base}-abc1`);
    const renamed = await patch(created.body.id, { slug: `\t${base}-Renamed\n` });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    expect(renamed.body.slug).toBe(`${base}-renamed`);
  });

  it('refuses anything outside the grammar with 422 SLUG_INVALID, pointing at /body/slug', async () => {
    const bad = [
      '',
      '   ',
      'has space',
      'under_score',
      '-leading',
      'trailing-',
      'double--hyphen',
      'ümlaut',
      'dot.ted',
      'a/b',
      'x'.repeat(101),
      42,
      null,
    ];
    for (const slug of bad) {
      const res = await post({ slug });
      expectProblem(res, 422, 'SLUG_INVALID');
      expect(res.body.errors.length, JSON.stringify(slug)).toBeGreaterThan(0);
      for (const error of res.body.errors) expect(error.pointer, JSON.stringify(slug)).toBe('/body/slug');
    }
    const row = await createContent(site);
    expectProblem(await patch(row.id, { slug: 'Not A Slug' }), 422, 'SLUG_INVALID');
    // 100 characters is the limit, inclusive.
    expect((await post({ slug: 'a'.repeat(100) })).status).toBe(201);
  });

  it('a slug is unique in the tenant among live rows (409 SLUG_TAKEN, whatever its spelling), and a delete releases it', async () => {
    const slug = uniqueSlug('taken');
    const first = await createContent(site, { slug });
    const seen = (await outbox(site)).length;
    expectProblem(await post({ slug }), 409, 'SLUG_TAKEN');
    expectProblem(await post({ slug: ` ${slug.toUpperCase()} ` }), 409, 'SLUG_TAKEN');
    const other = await createContent(site);
    expectProblem(await patch(other.id, { slug }), 409, 'SLUG_TAKEN');
    expect((await outbox(site)).length, 'a refused write publishes nothing').toBe(seen + 1); // the other's created event
    expect((await site.app.http(site.host).delete(`${CONTENTS}/${first.id}`).set('Cookie', site.cookie)).status).toBe(
      204,
    );
    const again = await post({ slug });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.id).not.toBe(first.id);
  });

  it('another tenant may use the same slug', async () => {
    const slug = uniqueSlug('shared');
    await createContent(site, { slug });
    const { createCustomer } = await import('../../helpers/app.ts');
    const other = await createCustomer(site.app, 'fields-other');
    const cookie = (await signInAs(site.app, other, ['content:manage', 'content:read'])).cookie;
    const res = await site.app
      .http('fields-other.localhost')
      .post(CONTENTS)
      .set('Cookie', cookie)
      .send({ slug, title: 'T', kind: 'page', body: '' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });
});

describe('title: 1–200 characters, counted as code points', () => {
  it('accepts 200 emoji or 200 code points of letters and combining marks, and refuses one more', async () => {
    const emoji = '😀'.repeat(200); // 400 UTF-16 units, 800 bytes: 200 characters
    const combining = 'e\u0301'.repeat(100); // 100 letters, each with a combining acute: 200 code points
    const mixed = `${'👩🏽'.repeat(50)}${'a\u0308'.repeat(50)}`; // emoji + skin tone (2 code points each), a + diaeresis (2 each)
    for (const title of [emoji, combining, mixed]) {
      expect([...title].length).toBe(200);
      const res = await post({ slug: uniqueSlug('title'), title });
      expect(res.status, JSON.stringify(res.body).slice(0, 200)).toBe(201);
      expect(res.body.title).toBe(title);
      expect((await storedRow(site, res.body.id)).title).toBe(title);
    }
    for (const title of [`${emoji}😀`, `${combining}e`, `${mixed}\u0301`, '']) {
      const res = await post({ slug: uniqueSlug('title'), title });
      expectProblem(res, 422, 'VALIDATION_FAILED');
      expect(res.body.errors).toEqual([expect.objectContaining({ pointer: '/body/title' })]);
    }
  });
});

describe('kind and body', () => {
  it('kind is page or post', async () => {
    expect((await post({ slug: uniqueSlug(), kind: 'page' })).status).toBe(201);
    expect((await post({ slug: uniqueSlug(), kind: 'post' })).status).toBe(201);
    expectProblem(await post({ slug: uniqueSlug(), kind: 'note' }), 422, 'VALIDATION_FAILED');
  });

  it('body is Markdown of at most 200,000 characters, HTML in it kept as text', async () => {
    const html = '<script>alert(1)</script><b onclick="x()">bold</b>';
    const kept = await post({ slug: uniqueSlug(), body: html });
    expect(kept.status).toBe(201);
    expect(kept.body.body).toBe(html);
    expect((await post({ slug: uniqueSlug(), body: 'é'.repeat(200_000) })).status).toBe(201);
    expectProblem(await post({ slug: uniqueSlug(), body: 'x'.repeat(200_001) }), 422, 'VALIDATION_FAILED');
  });
});

describe('status, publishedAt and author are not the body’s to set', () => {
  it('refuses status and publishedAt on create and PATCH, naming the command routes that own them', async () => {
    const row = await createContent(site);
    const owners = {
      status: ['publish', 'unpublish', 'archive'],
      publishedAt: ['publish', 'unpublish'],
    };
    for (const [field, commands] of Object.entries(owners)) {
      const value = field === 'status' ? 'published' : new Date().toISOString();
      for (const res of [await post({ slug: uniqueSlug(), [field]: value }), await patch(row.id, { [field]: value })]) {
        expectProblem(res, 422, 'FIELD_COMMAND_OWNED');
        expect(res.body).toMatchObject({ field });
        for (const c of commands) expect(res.body.detail).toContain(`POST /api/v1/content/contents/{id}/${c}`);
      }
    }
  });

  it('refuses author on create and PATCH, saying it is set from the caller; the stored author is the caller', async () => {
    const row = await createContent(site);
    expect(row.author).toBe(site.userId);
    const somebody = (await signInAs(site.app, site.tenant, [])).userId;
    for (const res of [
      await post({ slug: uniqueSlug(), author: somebody }),
      await patch(row.id, { author: somebody }),
    ]) {
      expectProblem(res, 422, 'FIELD_IMMUTABLE');
      expect(res.body).toMatchObject({ field: 'author' });
      expect(res.body.detail).toContain('set from the caller');
    }
    // Another manager's content is theirs.
    const other = await signInAs(site.app, site.tenant, ['content:manage', 'content:read']);
    const theirs = await site.app
      .http(site.host)
      .post(CONTENTS)
      .set('Cookie', other.cookie)
      .send({ slug: uniqueSlug(), title: 'T', kind: 'page', body: '' });
    expect(theirs.body.author).toBe(other.userId);
  });
});

describe('events: created, updated and deleted carry the id and the slug, never the body', () => {
  it('publishes content.content.created / .updated / .deleted with { id, slug }', async () => {
    const seen = (await outbox(site)).length;
    const row = await createContent(site, { body: 'secret body text' });
    const renamed = uniqueSlug('renamed');
    expect((await patch(row.id, { slug: renamed, body: 'another body' })).status).toBe(200);
    expect((await site.app.http(site.host).delete(`${CONTENTS}/${row.id}`).set('Cookie', site.cookie)).status).toBe(
      204,
    );
    const events = (await outbox(site)).slice(seen);
    expect(events).toEqual([
      { name: 'content.content.created', payload: { id: row.id, slug: row.slug } },
      { name: 'content.content.updated', payload: { id: row.id, slug: renamed, changed: ['slug', 'body'] } },
      { name: 'content.content.deleted', payload: { id: row.id, slug: renamed } },
    ]);
    expect(JSON.stringify(events)).not.toContain('body text');
  });
});

describe('permissions: content:read lists and reads, content:manage writes', () => {
  it('a reader lists and reads but may not create, PATCH, DELETE or command', async () => {
    const row = await createContent(site);
    const reader = (await signInAs(site.app, site.tenant, ['content:read'])).cookie;
    const http = site.app.http(site.host);
    expect((await http.get(CONTENTS).set('Cookie', reader)).status).toBe(200);
    expect((await http.get(`${CONTENTS}/${row.id}`).set('Cookie', reader)).status).toBe(200);
    expectProblem(
      await http.post(CONTENTS).set('Cookie', reader).send({ slug: uniqueSlug(), title: 'T', kind: 'page', body: '' }),
      403,
      'AUTH_FORBIDDEN',
    );
    expectProblem(
      await http.patch(`${CONTENTS}/${row.id}`).set('Cookie', reader).send({ title: 'U' }),
      403,
      'AUTH_FORBIDDEN',
    );
    expectProblem(await http.delete(`${CONTENTS}/${row.id}`).set('Cookie', reader), 403, 'AUTH_FORBIDDEN');
    for (const c of ['publish', 'unpublish', 'archive'])
      expectProblem(await http.post(`${CONTENTS}/${row.id}/${c}`).set('Cookie', reader), 403, 'AUTH_FORBIDDEN');
  });
});
