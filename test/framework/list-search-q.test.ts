import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * Issue 35, point 2: generated lists take `q`, a case-insensitive substring over the entity's
 * searchable fields (tasks: title; users: email and display name), with paging and total over
 * the matches, refused as 422 outside 1..200 characters, and documented in OpenAPI.
 */

let app: TestApp;
let acme: TenantRef;
let manager: SignedIn;
const host = 'search-acme.localhost';
const TASKS = '/api/v1/task/tasks';

const titles = [
  'Renew the certificate',
  'renew the domain',
  'Call the customer back',
  '100% done',
  'under_score',
  'underXscore',
];

const createTask = (title: string) =>
  app
    .http(host)
    .post(TASKS)
    .set('Cookie', manager.cookie)
    .send({ title, priority: 'low', deadline: '2099-01-01T00:00:00Z' })
    .expect(201);

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'search-acme', host);
  manager = await signInAs(app, acme, ['task:read', 'task:update', 'user:read'], { email: 'manager@search.test' });
  for (const title of titles) await createTask(title);
});
afterAll(async () => {
  await app?.close();
});

const list = (query: Record<string, string | number>) =>
  app.http(host).get(TASKS).query(query).set('Cookie', manager.cookie);

describe('GET /api/v1/task/tasks?q=', () => {
  it('answers the rows whose title contains the text, ignoring case, with total counting only them', async () => {
    const res = await list({ q: 'RENEW', sort: 'title' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.items.map((t: { title: string }) => t.title)).toEqual([
      'Renew the certificate',
      'renew the domain',
    ]);
    expect(res.body).toMatchObject({ total: 2, totalExact: true, next: null });
  });

  it('takes % and _ as themselves, not as wildcards', async () => {
    expect((await list({ q: '%' })).body.items.map((t: { title: string }) => t.title)).toEqual(['100% done']);
    expect((await list({ q: '_' })).body.items.map((t: { title: string }) => t.title)).toEqual(['under_score']);
  });

  it('pages through the matches with after, the same q on each page', async () => {
    const first = await list({ q: 'THE', sort: 'title', limit: 2 });
    expect(first.body.total).toBe(3);
    const seen = first.body.items.map((t: { title: string }) => t.title);
    let next = first.body.next as string | null;
    while (next) {
      const page = await list({ q: 'THE', sort: 'title', limit: 2, after: next });
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((t: { title: string }) => t.title));
      next = page.body.next;
    }
    expect(seen).toEqual(['Call the customer back', 'Renew the certificate', 'renew the domain']);
  });

  it('answers an empty page when nothing matches, and no q the whole list', async () => {
    expect((await list({ q: 'nothing like this' })).body).toMatchObject({ items: [], total: 0 });
    expect((await list({})).body.total).toBe(titles.length);
  });

  it('refuses an empty q and one over 200 characters with 422 VALIDATION_FAILED naming the parameter', async () => {
    for (const q of ['', 'x'.repeat(201)]) {
      const res = await list({ q });
      expect(res.status, q).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toContain('/querystring/q');
    }
  });
});

describe('GET /api/v1/user/users?q=', () => {
  it('searches the address and the display name', async () => {
    const byName = await app
      .http(host)
      .get('/api/v1/user/users')
      .query({ q: 'test user' })
      .set('Cookie', manager.cookie);
    expect(byName.status).toBe(200);
    expect(byName.body.items.map((u: { email: string }) => u.email)).toContain('manager@search.test');
    const byAddress = await app
      .http(host)
      .get('/api/v1/user/users')
      .query({ q: 'MANAGER@search' })
      .set('Cookie', manager.cookie);
    expect(byAddress.body.items.map((u: { email: string }) => u.email)).toEqual(['manager@search.test']);
  });
});

describe('OpenAPI', () => {
  it('documents q on the generated lists, naming the fields it searches', async () => {
    const doc = (await app.http().get('/api/v1/openapi.json').expect(200)).body;
    const q = (path: string) => doc.paths[path].get.parameters.find((p: { name: string }) => p.name === 'q');
    expect(q(TASKS)).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'string', minLength: 1, maxLength: 200 },
    });
    expect(q(TASKS).description).toContain('title');
    expect(q('/api/v1/user/users').description).toContain('email or displayName');
  });
});

describe('case is ignored the way PostgreSQL lower-cases, on both sides', () => {
  // JavaScript lower-cases a word-final capital sigma to ς and İ to i + a combining dot; PostgreSQL's
  // lower() gives σ and its own i. Lower-casing the text in JavaScript and the column in SQL made a
  // title miss itself; both sides go through lower() (docs/api-conventions.md: strpos(lower(field), lower(q))).
  const words = ['ΟΔΟΣ', 'İstanbul'];
  const title = `${words.join(' ')} trip`;
  const found = async (query: Record<string, string>, path = TASKS) => {
    const res = await app.http(host).get(path).query(query).set('Cookie', manager.cookie);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };

  beforeAll(() => createTask(title));

  it('q, contains and startsWith find a title by its own words, and the summary and the export count it', async () => {
    for (const word of words) {
      expect(
        (await found({ q: word })).items.map((t: { title: string }) => t.title),
        `q=${word}`,
      ).toEqual([title]);
      const contains = await found({ title: `contains.${word}` });
      expect(
        contains.items.map((t: { title: string }) => t.title),
        `contains.${word}`,
      ).toEqual([title]);
      expect((await found({ q: word }, `${TASKS}/summary`)).total, `summary q=${word}`).toBe(1);
      const csv = await app
        .http(host)
        .get(TASKS)
        .query({ title: `contains.${word}`, format: 'csv', fields: 'title' })
        .set('Cookie', manager.cookie);
      expect(csv.text.split('\r\n').filter((line) => line !== '').length, `export contains.${word}`).toBe(2);
    }
    const starts = await found({ title: `startsWith.${words[0]}` });
    expect(starts.items.map((t: { title: string }) => t.title)).toEqual([title]);
    expect((await found({ or: `(title.contains.${words[0]},title.eq.none)` })).total).toBe(1);
  });
});
