import { describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * docs/api-conventions.md, "Requests": bodies are validated as sent, and a property the schema does
 * not name is refused with 422 VALIDATION_FAILED, never silently dropped. A write that declares no
 * body (a command such as publish, a DELETE) names no property at all: a body naming one is
 * refused, alone and in a batch, and nothing is written or published; no body, or `{}`, is taken.
 */
const t = useTestApp({ customers: ['bodiless'] });
const HOST = 'bodiless.localhost';
const CONTENTS = '/api/v1/content/contents';

const newPage = async (cookie: string, slug: string) =>
  (
    await t.app
      .http(HOST)
      .post(CONTENTS)
      .set('Cookie', cookie)
      .send({ slug, title: 'A page', kind: 'page', body: 'Text' })
  ).body as { id: string; updatedAt: string };
const eventsOf = async (id: string) =>
  (await t.app.services.db.pool.query(`select name from outbox where payload->>'id' = $1 order by id`, [id])).rows.map(
    (r) => r.name as string,
  );

describe('a write that declares no body', () => {
  it('refuses a body naming a property (publish {publishedAt}) with 422 at its pointer; nothing written or published', async () => {
    const { cookie } = await signInAs(t.app, t.bodiless, ['*']);
    const page = await newPage(cookie, 'backdated');
    const res = await t.app
      .http(HOST)
      .post(`${CONTENTS}/${page.id}/publish`)
      .set('Cookie', cookie)
      .send({ publishedAt: '2020-01-01T00:00:00Z' });
    expect(res.status).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.errors).toEqual([{ pointer: '/body/publishedAt', message: expect.any(String) }]);
    const read = await t.app.http(HOST).get(`${CONTENTS}/${page.id}`).set('Cookie', cookie);
    expect(read.body).toMatchObject({ status: 'draft', publishedAt: null, updatedAt: page.updatedAt });
    expect(await eventsOf(page.id)).toEqual(['content.content.created']);
  });

  it('refuses a body that is no object, and one on a DELETE; nothing deleted', async () => {
    const { cookie } = await signInAs(t.app, t.bodiless, ['*']);
    const page = await newPage(cookie, 'kept');
    const array = await t.app.http(HOST).post(`${CONTENTS}/${page.id}/archive`).set('Cookie', cookie).send([1]);
    expect(array.status).toBe(422);
    expect(array.body.code).toBe('VALIDATION_FAILED');
    const del = await t.app.http(HOST).delete(`${CONTENTS}/${page.id}`).set('Cookie', cookie).send({ force: true });
    expect(del.status).toBe(422);
    expect(del.body.code).toBe('VALIDATION_FAILED');
    expect((await t.app.http(HOST).get(`${CONTENTS}/${page.id}`).set('Cookie', cookie)).body.status).toBe('draft');
    expect(await eventsOf(page.id)).toEqual(['content.content.created']);
  });

  it('takes no body and {} as before', async () => {
    const { cookie } = await signInAs(t.app, t.bodiless, ['*']);
    const page = await newPage(cookie, 'plain');
    const none = await t.app.http(HOST).post(`${CONTENTS}/${page.id}/publish`).set('Cookie', cookie);
    expect(none.status).toBe(200);
    const empty = await t.app.http(HOST).post(`${CONTENTS}/${page.id}/archive`).set('Cookie', cookie).send({});
    expect(empty.status).toBe(200);
    expect(empty.body.status).toBe('archived');
    const del = await t.app.http(HOST).delete(`${CONTENTS}/${page.id}`).set('Cookie', cookie);
    expect(del.status).toBe(204);
  });

  it('in a batch: the request naming a property is refused with its index; the batch applies nothing', async () => {
    const { cookie } = await signInAs(t.app, t.bodiless, ['*']);
    const page = await newPage(cookie, 'batched');
    const res = await t.app
      .http(HOST)
      .post('/api/v1/batch')
      .set('Cookie', cookie)
      .send({
        requests: [
          { method: 'POST', path: `${CONTENTS}/${page.id}/publish` },
          { method: 'POST', path: `${CONTENTS}/${page.id}/archive`, body: { status: 'draft' } },
        ],
      });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED', index: 1 });
    expect(res.body.errors).toEqual([{ pointer: '/body/requests/1/body/status', message: expect.any(String) }]);
    expect((await t.app.http(HOST).get(`${CONTENTS}/${page.id}`).set('Cookie', cookie)).body.status).toBe('draft');
    const ok = await t.app
      .http(HOST)
      .post('/api/v1/batch')
      .set('Cookie', cookie)
      .send({
        requests: [
          { method: 'POST', path: `${CONTENTS}/${page.id}/publish`, body: {} },
          { method: 'POST', path: `${CONTENTS}/${page.id}/archive` },
        ],
      });
    expect(ok.status).toBe(200);
    expect(ok.body.results.map((r: { status: number }) => r.status)).toEqual([200, 200]);
  });
});
