import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { createTenant } from '../../../framework/tenancy/create-tenant.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  cookie = (await signInAs(app, app.operator, ['tenant:manage'])).cookie;
  // Created in order, so the default sort (oldest first) lists them operator, t00, t01, ...
  for (let i = 0; i < 25; i++) await createCustomer(app, `t${String(i).padStart(2, '0')}`);
  await createCustomer(app, 'acme-corp', 'shop.acme.example');
  await createCustomer(app, 'globex', 'www.acme-partner.test');
  await createCustomer(app, 'odd', 'odd.localhost');
});
afterAll(async () => {
  await app?.close();
});

const list = (query: string) => app.http().get(`/api/v1/tenant/tenants?${query}`).set('Cookie', cookie);
const slugs = (body: { items: { slug: string }[] }) => body.items.map((t) => t.slug);

describe('the operator’s tenant list pages with a cursor', () => {
  it('walks every tenant once, page by page, with after=<next>', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const res = await list(`limit=10${after ? `&after=${after}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...slugs(res.body));
      after = res.body.next;
      pages++;
    } while (after);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(29);
    expect(new Set(seen).size).toBe(29);
    expect(seen.slice(0, 3)).toEqual(['operator', 't00', 't01']);
    expect(seen.at(-1)).toBe('odd');
  });

  it('follows a cursor in a descending sort', async () => {
    const first = await list('limit=5&sort=-slug');
    const second = await list(`limit=5&sort=-slug&after=${first.body.next}`);
    const all = [...slugs(first.body), ...slugs(second.body)];
    expect(all).toEqual([...all].sort().reverse());
    expect(all[0]).toBe('t24');
  });

  it('refuses a cursor it did not give with a problem, not a server error', async () => {
    const res = await list('after=not-a-cursor');
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
  });
});

describe('q searches the tenant list by name, slug or host', () => {
  it('finds by a host’s part, ignoring case', async () => {
    const res = await list('q=ACME');
    expect(res.status).toBe(200);
    expect(slugs(res.body).sort()).toEqual(['acme-corp', 'globex']);
    expect(res.body.total).toBe(2);
  });

  it('finds by name and by slug', async () => {
    expect(slugs((await list('q=customer%20t0')).body)).toHaveLength(10);
    expect(slugs((await list('q=glob')).body)).toEqual(['globex']);
  });

  it('takes % and _ literally', async () => {
    expect((await list('q=%25')).body.items).toEqual([]);
    expect((await list('q=t_1')).body.items).toEqual([]);
  });

  it('pages a search with the same q', async () => {
    const first = await list('q=t1&limit=5');
    expect(slugs(first.body)).toEqual(['t10', 't11', 't12', 't13', 't14']);
    const second = await list(`q=t1&limit=5&after=${first.body.next}`);
    expect(slugs(second.body)).toEqual(['t15', 't16', 't17', 't18', 't19']);
    expect(second.body.next).toBeNull();
  });

  it('refuses an empty q', async () => {
    const res = await list('q=');
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
  });
});

describe('the operator’s tenant search ignores case the way PostgreSQL lower-cases', () => {
  it('finds a tenant by its own words, a final capital sigma and a dotted capital I among them', async () => {
    // JavaScript lower-cases ΟΔΟΣ to οδος and İ to i + a combining dot; PostgreSQL's lower() to οδοσ
    // and its own i: the pattern goes through lower() in SQL, as the column does.
    await app.services.transactions.run(app.operator, (ctx) =>
      createTenant(ctx, app.services, { slug: 'greek', name: 'ΟΔΟΣ İstanbul', host: 'greek.localhost' }),
    );
    for (const q of ['ΟΔΟΣ', 'İstanbul', 'ΟΔΟΣ İ']) {
      const res = await list(`q=${encodeURIComponent(q)}`);
      expect(res.status).toBe(200);
      expect(slugs(res.body), q).toEqual(['greek']);
    }
  });
});
