import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { openingStatements } from '../../framework/context/opening.ts';

// The opening statement runs on every signed-in request, on a plan made once per connection. A
// text parameter compared with uuid columns is cast in the plan, and a sequential scan of a small
// table (PostgreSQL's choice for users and roles at a few hundred rows) casts it again per row.
let app: TestApp;
let acme: TenantRef;
let reader: SignedIn;

beforeAll(async () => {
  app = await startTestApp({ config: testConfig({ database: { pool_size: 1 } }) });
  acme = await createCustomer(app, 'acme');
  reader = await signInAs(app, acme, ['widget:read']);
});
// The texts the app sends: each carries the installation's statement_timeout and plan source (opening.ts).
const opening = () => openingStatements(app.services.db.statementTimeoutMs, app.services.registry.planEntitlementsSql);
afterAll(async () => {
  await app?.close();
});

describe('the opening statement compares the tenant as a uuid, parsed once', () => {
  it('is prepared with its tenant parameter typed uuid', async () => {
    const res = await app.http('acme.localhost').get('/api/v1/testkit/widgets').set('Cookie', reader.cookie);
    expect(res.status).toBe(200);
    const { rows } = await app.services.db.pool.query<{ types: string }>(
      `select parameter_types::text as types from pg_prepared_statements where statement = $1`,
      [opening().enterWithSessionGuarded],
    );
    // The list is one exchange: its opening statement is the guarded one, the route's permission its fourth parameter.
    expect(rows).toEqual([{ types: '{uuid,bytea,"timestamp with time zone",text}' }]);
  });

  it('has a generic plan with no cast of the tenant in any scan', async () => {
    const client = await app.services.db.pool.connect();
    try {
      await client.query('begin');
      await client.query(`set local plan_cache_mode = force_generic_plan`);
      await client.query(`prepare opening_probe as ${opening().enterWithSession}`);
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `explain (verbose, costs off) execute opening_probe($1, '\\x00', now())`.replace('$1', `'${acme.id}'`),
      );
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/tenant_id = \$1\b/);
      expect(plan).not.toMatch(/\(\$1\)::uuid/);
    } finally {
      await client.query('rollback');
      await client.query('deallocate opening_probe').catch(() => {});
      client.release();
    }
  });
});
