import { beforeAll, describe, expect, it } from 'vitest';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testConfig } from '../helpers/config.ts';
import { seedWithIndexesRebuilt } from '../helpers/bulk-seed.ts';

/**
 * Issue 44, point 11: a filter no index serves still ends within `database.statement_timeout_ms`.
 * Every value of the query language is a parameter, but what it asks may read every row: such a
 * list is cancelled by PostgreSQL at the limit and answers 503 DB_TIMEOUT as a problem document,
 * with Retry-After, never a hang; the same list with a filter an index serves answers at once.
 */

const TIMEOUT_MS = 200;
const ROWS = 600_000;
const HOST = 'acme.localhost';

const t = useTestApp({
  customers: ['acme'],
  config: testConfig({ database: { statement_timeout_ms: TIMEOUT_MS } }),
});
let reader: SignedIn;

beforeAll(async () => {
  reader = await signInAs(t.app, t.acme, ['widget:read']);
  // Seeded in SQL, not through the API, on a connection of the test's own without the limit.
  const client = await t.app.services.db.pool.connect();
  try {
    await client.query('begin');
    await client.query('set local statement_timeout = 0');
    // The list indexes built once over the rows rather than taking each insert (bulk-seed.ts).
    await seedWithIndexesRebuilt(client, 'widgets', () =>
      client.query(
        `insert into widgets (tenant_id, name, size, color, note)
         select $1, 'w' || g, g % 1000, 'grey', repeat(md5(g::text), 6) from generate_series(1, ${ROWS}) g`,
        [t.acme.id],
      ),
    );
    await client.query('commit');
    await client.query('analyze widgets');
  } finally {
    client.release();
  }
}, 180_000);

describe('a filter no index serves', () => {
  it('is cancelled at database.statement_timeout_ms: 503 DB_TIMEOUT with Retry-After, a problem document', async () => {
    // Four substring tests of a long text on every row: no index serves it.
    const slow = 'or=(note.contains.zz1,note.contains.zz2,note.contains.zz3,note.startsWith.zz4)&limit=100';
    const started = performance.now();
    const res = await t.app.http(HOST).get(`/api/v1/testkit/widgets?${slow}`).set('Cookie', reader.cookie);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('DB_TIMEOUT');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(JSON.stringify(res.body)).not.toMatch(/select|widgets|statement timeout/i);
  }, 60_000);

  it('while a filter an index serves answers within the limit', async () => {
    const res = await t.app
      .http(HOST)
      .get('/api/v1/testkit/widgets?name=eq.w42&sort=name')
      .set('Cookie', reader.cookie);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.items.map((w: { name: string }) => w.name)).toEqual(['w42']);
  });
});
