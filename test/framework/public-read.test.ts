import { beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, createCustomer, signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { ifNoneMatchHits, weakETag } from '../../framework/http/etag.ts';
import { withoutRequestId } from '../helpers/problems.ts';
import { dereferenced } from '../helpers/openapi.ts';

const HOST = 'pages.localhost';
const OTHER_HOST = 'pages-other.localhost';
const ARTICLES = '/api/v1/testkit/articles';
const PUBLIC = '/api/v1/testkit/public';

let tenant: TenantRef;
let cookie: string;

const t = useTestApp();
beforeAll(async () => {
  tenant = await createCustomer(t.app, 'pages', HOST);
  await createCustomer(t.app, 'pages-other', OTHER_HOST);
  cookie = (await signInAs(t.app, tenant, ['article:read', 'article:write'])).cookie;
});

const anonymous = (host = HOST) => t.app.http(host);

async function createArticle(slug: string, publish = true): Promise<{ id: string; slug: string }> {
  const created = await t.app
    .http(HOST)
    .post(ARTICLES)
    .set('Cookie', cookie)
    .send({ slug, title: `Title of ${slug}`, body: `Body of ${slug}` });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  if (publish) {
    const published = await t.app
      .http(HOST)
      .post(`${ARTICLES}/${created.body.id}/publish`)
      .set('Cookie', cookie)
      .send({});
    expect(published.status, JSON.stringify(published.body)).toBe(200);
  }
  return created.body;
}

describe('public read by a unique field: GET /api/v1/<module>/<path>/{field}', () => {
  it('answers anybody the public shape of the published row, and nothing else of it', async () => {
    const article = await createArticle('hello-world');
    const res = await anonymous().get(`${PUBLIC}/hello-world`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(res.body).sort()).toEqual(['body', 'publishedAt', 'slug', 'title']);
    expect(res.body).toMatchObject({ slug: 'hello-world', title: 'Title of hello-world', body: 'Body of hello-world' });
    // The row holds a Date; the answer carries the ISO string of the stored time.
    const { rows } = await t.app.services.db.pool.query<{ published_at: Date }>(
      'select published_at from articles where id = $1',
      [article.id],
    );
    expect(res.body.publishedAt).toBe(rows[0]!.published_at.toISOString());
  });

  it('answers the same 404 NOT_FOUND for an unknown value, a row that is not public and a deleted row', async () => {
    const draft = await createArticle('still-a-draft', false);
    const gone = await createArticle('gone-now');
    expect((await t.app.http(HOST).delete(`${ARTICLES}/${gone.id}`).set('Cookie', cookie)).status).toBe(204);
    const unknown = await anonymous().get(`${PUBLIC}/no-such-page`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(unknown.body.code).toBe('NOT_FOUND');
    for (const slug of [draft.slug, gone.slug]) {
      const res = await anonymous().get(`${PUBLIC}/${slug}`);
      expect(res.status, slug).toBe(404);
      expect(withoutRequestId(res.body), slug).toEqual(withoutRequestId(unknown.body));
    }
  });

  it("finds only rows of the host's tenant", async () => {
    await createArticle('only-here');
    expect((await anonymous().get(`${PUBLIC}/only-here`)).status).toBe(200);
    const elsewhere = await anonymous(OTHER_HOST).get(`${PUBLIC}/only-here`);
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body.code).toBe('NOT_FOUND');
    expect((await anonymous('nowhere.localhost').get(`${PUBLIC}/only-here`)).body.code).toBe('NO_SITE');
  });

  it('refuses a parameter outside its schema with 422 VALIDATION_FAILED', async () => {
    for (const bad of ['not_a_slug', 'two--hyphens', `${'x'.repeat(81)}`]) {
      const res = await anonymous().get(`${PUBLIC}/${bad}`);
      expect(res.status, bad).toBe(422);
      expect(res.body.code, bad).toBe('VALIDATION_FAILED');
      expect(res.body.errors[0].pointer, bad).toMatch(/^\/params/);
    }
  });

  it('normalises the parameter before the lookup, as the field is stored', async () => {
    await createArticle('mixed-case');
    const res = await anonymous().get(`${PUBLIC}/Mixed-CASE`);
    expect(res.status).toBe(200);
    expect(res.body.slug).toBe('mixed-case');
  });

  it('is one operation in OpenAPI: public, with its parameter, shape, 304 and 422', async () => {
    const doc = await dereferenced((await t.app.http().get('/api/v1/openapi.json')).body);
    const op = doc.paths['/api/v1/testkit/public/{slug}'].get;
    expect(op.operationId).toBe('testkit-article-public-read');
    expect(op.security).toEqual([]);
    expect(op.parameters).toEqual([expect.objectContaining({ name: 'slug', in: 'path', required: true })]);
    expect(Object.keys(op.responses['200'].content['application/json'].schema.properties).sort()).toEqual([
      'body',
      'publishedAt',
      'slug',
      'title',
    ]);
    expect(op.responses['304']).toBeDefined();
    expect(op.responses['422']).toBeDefined();
  });
});

describe('conditional GET: weak ETag and If-None-Match', () => {
  it('carries a weak ETag; an If-None-Match naming it is 304 with the ETag and no body', async () => {
    await createArticle('cached-page');
    const first = await anonymous().get(`${PUBLIC}/cached-page`);
    const etag = first.headers.etag!;
    expect(etag).toMatch(/^W\/"[^"]+"$/);
    const again = await anonymous().get(`${PUBLIC}/cached-page`).set('If-None-Match', etag);
    expect(again.status).toBe(304);
    expect(again.headers.etag).toBe(etag);
    expect(again.text ?? '').toBe('');
    expect(again.headers['content-length']).toBeUndefined();
    // A list naming it, the strong form of it and * all match by weak comparison.
    for (const header of [`"other", ${etag}`, etag.slice(2), '*']) {
      expect((await anonymous().get(`${PUBLIC}/cached-page`).set('If-None-Match', header)).status, header).toBe(304);
    }
    const stale = await anonymous().get(`${PUBLIC}/cached-page`).set('If-None-Match', 'W/"stale"');
    expect(stale.status).toBe(200);
    expect(stale.body.slug).toBe('cached-page');
  });

  it('gives a changed row a new ETag, so the old one answers 200 with the new content', async () => {
    const article = await createArticle('changing-page');
    const before = await anonymous().get(`${PUBLIC}/changing-page`);
    const patched = await t.app
      .http(HOST)
      .patch(`${ARTICLES}/${article.id}`)
      .set('Cookie', cookie)
      .send({ title: 'A new title' });
    expect(patched.status).toBe(200);
    const after = await anonymous().get(`${PUBLIC}/changing-page`).set('If-None-Match', before.headers.etag!);
    expect(after.status).toBe(200);
    expect(after.body.title).toBe('A new title');
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect((await anonymous().get(`${PUBLIC}/changing-page`).set('If-None-Match', after.headers.etag!)).status).toBe(
      304,
    );
  });

  it('answers a non-matching 404 rather than 304 for * when there is no row', async () => {
    const res = await anonymous().get(`${PUBLIC}/never-written`).set('If-None-Match', '*');
    expect(res.status).toBe(404);
  });
});

describe('the validator cache: a current If-None-Match is 304 without the database', () => {
  const poll = async (check: () => Promise<boolean>, what: string) => {
    for (let i = 0; i < 100; i++) {
      if (await check()) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  const transactionsDuring = async (request: () => Promise<unknown>, on = t.app): Promise<number> => {
    const spy = vi.spyOn(on.services.transactions, 'run');
    try {
      await request();
      return spy.mock.calls.length;
    } finally {
      spy.mockRestore();
    }
  };

  it('opens no transaction for a current ETag once a read has seen it; a cold, stale or absent one asks the database', async () => {
    await createArticle('validated-page');
    const conditional = (etag: string) => anonymous().get(`${PUBLIC}/validated-page`).set('If-None-Match', etag);
    let etag = '';
    let answer: { status: number; headers: Record<string, string> } | undefined;
    // The article's own writes notify every process on commit, and a notification landing after
    // the first read drops what that read stored (as it should): on a loaded machine it can land
    // that late, so the read and the conditional read are repeated until it has.
    await vi.waitFor(
      async () => {
        expect(
          await transactionsDuring(
            async () => (etag = (await anonymous().get(`${PUBLIC}/validated-page`)).headers.etag!),
          ),
        ).toBe(1);
        expect(await transactionsDuring(async () => (answer = await conditional(etag)))).toBe(0);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(answer!.status).toBe(304);
    expect(answer!.headers.etag).toBe(etag);
    expect(await transactionsDuring(() => conditional('W/"stale"'))).toBe(1);
    expect(await transactionsDuring(() => anonymous().get(`${PUBLIC}/validated-page`))).toBe(1);
    // Another tenant's host never answers from this tenant's entry.
    expect((await anonymous(OTHER_HOST).get(`${PUBLIC}/validated-page`).set('If-None-Match', etag)).status).toBe(404);
  });

  it('answers from the cache before validation and the handler, with the headers the handler gives; a malformed value still goes to them', async () => {
    await createArticle('early-page');
    const full = await anonymous().get(`${PUBLIC}/early-page`);
    const early = await anonymous().get(`${PUBLIC}/early-page`).set('If-None-Match', full.headers.etag!);
    expect(early.status).toBe(304);
    for (const header of ['etag', 'cache-control', 'x-content-type-options'])
      expect(early.headers[header], header).toBe(full.headers[header]);
    // The same ETag on a value outside the grammar is the handler's refusal; one holding NUL names
    // nothing, the 404 of any path parameter that does (docs/api-conventions.md), never the 304.
    expect((await anonymous().get(`${PUBLIC}/Early Page!`).set('If-None-Match', full.headers.etag!)).status).toBe(422);
    const nul = await anonymous().get(`${PUBLIC}/early-page%00`).set('If-None-Match', full.headers.etag!);
    expect(nul.status).toBe(404);
    expect(nul.body.code).toBe('NOT_FOUND');
  });

  it('a write through the API evicts before it answers, so the old ETag is 200 at once', async () => {
    const article = await createArticle('evicted-at-once');
    const etag = (await anonymous().get(`${PUBLIC}/evicted-at-once`)).headers.etag!;
    expect((await anonymous().get(`${PUBLIC}/evicted-at-once`).set('If-None-Match', etag)).status).toBe(304);
    // Without the trigger's NOTIFY, so that only the writing process's own eviction can do it.
    await t.app.services.db.pool.query('alter table articles disable trigger public_read_changed');
    try {
      for (let i = 0; i < 3; i++) {
        const before = (await anonymous().get(`${PUBLIC}/evicted-at-once`)).headers.etag!;
        expect((await anonymous().get(`${PUBLIC}/evicted-at-once`).set('If-None-Match', before)).status).toBe(304);
        const patched = await t.app
          .http(HOST)
          .patch(`${ARTICLES}/${article.id}`)
          .set('Cookie', cookie)
          .send({ title: `Title ${i}` });
        expect(patched.status).toBe(200);
        const after = await anonymous().get(`${PUBLIC}/evicted-at-once`).set('If-None-Match', before);
        expect(after.status, `after write ${i}`).toBe(200);
        expect(after.body.title).toBe(`Title ${i}`);
      }
      expect((await t.app.http(HOST).delete(`${ARTICLES}/${article.id}`).set('Cookie', cookie)).status).toBe(204);
      expect((await anonymous().get(`${PUBLIC}/evicted-at-once`).set('If-None-Match', '*')).status).toBe(404);
    } finally {
      await t.app.services.db.pool.query('alter table articles enable trigger public_read_changed');
    }
  });

  it('a write by any other means, in any process, evicts through the trigger and NOTIFY', async () => {
    const other = await startTestApp({ databaseUrl: t.app.databaseUrl });
    try {
      await createArticle('seen-everywhere');
      // The other process answers from its cache once it has read the page. The create's and the
      // publish's own notifications may reach it after that first read and evict the entry (a miss,
      // never a stale answer), so it reads again until its cache holds the page.
      let etag = '';
      await poll(async () => {
        etag = (await other.http(HOST).get(`${PUBLIC}/seen-everywhere`)).headers.etag!;
        return (
          (await transactionsDuring(
            () => other.http(HOST).get(`${PUBLIC}/seen-everywhere`).set('If-None-Match', etag),
            other,
          )) === 0
        );
      }, 'the other process to answer from its cache');
      // Unpublished by plain SQL: neither process's operations saw it, only the trigger did.
      await t.app.services.db.pool.query(
        `update articles set status = 'draft', published_at = null, updated_at = now() where slug = 'seen-everywhere'`,
      );
      await poll(
        async () => (await other.http(HOST).get(`${PUBLIC}/seen-everywhere`).set('If-None-Match', etag)).status === 404,
        'the other process to drop the entry',
      );
    } finally {
      await other.close();
    }
  });
});

describe('rows hold what PostgreSQL returns, as EntityRow types them', () => {
  it('gives a command and the generic operations a Date for a date-time field and null for an empty optional one; JSON carries ISO strings', async () => {
    const draft = await createArticle('typed-row', false);
    const ops = t.app.services.operations.of('testkit.article');
    const before = await t.app.services.transactions.run(tenant, (ctx) => ops.read(ctx, draft.id));
    expect(before.publishedAt).toBeNull();
    expect(before.createdAt).toBeInstanceOf(Date);
    const at = '2031-05-06T07:08:09.123Z';
    const published = await t.app.http(HOST).post(`${ARTICLES}/${draft.id}/publish`).set('Cookie', cookie).send({ at });
    expect(published.body.publishedAt).toBe(at);
    const after = await t.app.services.transactions.run(tenant, (ctx) => ops.read(ctx, draft.id));
    expect(after.publishedAt).toBeInstanceOf(Date);
    expect((after.publishedAt as Date).toISOString()).toBe(at);
  });
});

describe('the ETag helper any route can use (framework/http/etag.ts)', () => {
  it('derives a weak tag from a time, a number or text, hashing text an entity tag cannot hold', () => {
    const at = new Date('2030-01-02T03:04:05.678Z');
    expect(weakETag(at)).toBe(`W/"${at.getTime().toString(36)}"`);
    expect(weakETag(at)).not.toBe(weakETag(new Date(at.getTime() + 1)));
    expect(weakETag(255)).toBe('W/"73"');
    expect(weakETag('v1.2')).toBe('W/"v1.2"');
    expect(weakETag('has "quotes" and spaces')).toMatch(/^W\/"[A-Za-z0-9_-]{27}"$/);
  });

  it('compares by RFC 9110 weak comparison: W/ ignored on either side, lists, *, malformed members never match', () => {
    expect(ifNoneMatchHits('W/"a"', 'W/"a"')).toBe(true);
    expect(ifNoneMatchHits('"a"', 'W/"a"')).toBe(true);
    expect(ifNoneMatchHits('W/"a"', '"a"')).toBe(true);
    expect(ifNoneMatchHits('"b", W/"a" ,"c"', 'W/"a"')).toBe(true);
    expect(ifNoneMatchHits(['"b"', 'W/"a"'], 'W/"a"')).toBe(true);
    expect(ifNoneMatchHits(' * ', 'W/"a"')).toBe(true);
    expect(ifNoneMatchHits('"ab"', 'W/"a"')).toBe(false);
    expect(ifNoneMatchHits('a', 'W/"a"')).toBe(false);
    expect(ifNoneMatchHits(undefined, 'W/"a"')).toBe(false);
  });
});
