import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

// One connection in the pool, so the statements prepared by the requests are the ones this test
// reads back from pg_prepared_statements.
let app: TestApp;
let acme: TenantRef;
let reader: SignedIn;

beforeAll(async () => {
  app = await startTestApp({ config: testConfig({ database: { pool_size: 1 } }) });
  acme = await createCustomer(app, 'acme');
  reader = await signInAs(app, acme, ['widget:read']);
  const client = await app.services.db.pool.connect();
  try {
    await client.query('begin');
    await client.query(`select set_config('app.tenant_id', $1, true)`, [acme.id]);
    await client.query(
      `insert into widgets (name, size, color, created_at) select 'w' || i, i, 'grey', now() - make_interval(secs => 100 - i) from generate_series(1, 60) as i`,
    );
    await client.query('commit');
  } finally {
    client.release();
  }
});
afterAll(async () => {
  await app?.close();
});

interface PreparedOnConnection {
  statement: string;
  generic_plans: string;
  custom_plans: string;
}
const preparedListStatements = async () =>
  (
    await app.services.db.pool.query<PreparedOnConnection>(
      `select statement, generic_plans, custom_plans from pg_prepared_statements where statement like '%from "widgets"%' and statement like 'select%'`,
    )
  ).rows.map((r) => ({ statement: r.statement, generic: Number(r.generic_plans), custom: Number(r.custom_plans) }));

const list = async (query: string) => {
  const res = await app.http('acme.localhost').get(`/api/v1/testkit/widgets?${query}`).set('Cookie', reader.cookie);
  expect(res.status).toBe(200);
  return res.body as { items: { name: string }[]; total: number; next: string | null; limit: number; offset: number };
};

describe('a list page of a common size is planned once per connection', () => {
  it('runs the first page of the default size twelve times on one plan, made once', async () => {
    for (let i = 0; i < 12; i++) await list('limit=20');
    const ran = (await preparedListStatements()).filter((s) => s.generic + s.custom >= 12);
    expect(ran).toHaveLength(1);
    // With the page size as a parameter PostgreSQL judged its generic plan too dear and planned
    // every call anew (custom plans); with the size in the text there is one plan, reused.
    expect(ran[0]).toMatchObject({ custom: 0, generic: 12 });
  });

  it('follows a keyset page of that size on one plan after the first five calls', async () => {
    const first = await list('limit=20');
    for (let i = 0; i < 12; i++) await list(`limit=20&after=${first.next}`);
    const keyset = (await preparedListStatements()).filter((s) => s.generic + s.custom === 12);
    expect(keyset).toHaveLength(1);
    // The cursor's values are parameters: PostgreSQL plans the first five calls for their values,
    // then finds the generic plan as cheap and keeps it.
    expect(keyset[0]).toMatchObject({ custom: 5, generic: 7 });
  });

  it('answers other sizes and offsets, whose size and offset stay parameters, with the same rows', async () => {
    const all = await list('limit=100');
    expect(all.items).toHaveLength(60);
    expect(all.total).toBe(60);
    const odd = await list('limit=7&offset=3');
    expect(odd).toMatchObject({ limit: 7, offset: 3, total: 60 });
    expect(odd.items.map((w) => w.name)).toEqual(all.items.slice(3, 10).map((w) => w.name));
    const offsetOfCommonSize = await list('limit=20&offset=40');
    expect(offsetOfCommonSize.items.map((w) => w.name)).toEqual(all.items.slice(40, 60).map((w) => w.name));
    expect(offsetOfCommonSize.next).toBeNull();
    const sevenOnwards = await list(`limit=7&after=${odd.next}`);
    expect(sevenOnwards.items.map((w) => w.name)).toEqual(all.items.slice(10, 17).map((w) => w.name));
  });
});
