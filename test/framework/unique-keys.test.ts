import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, signInAs, createCustomer, type TestApp } from '../helpers/app.ts';
import { allModules } from '../../modules/index.ts';
import { declaredUniqueKeys, uniqueKeyOf, uniqueViolationProblem } from '../../framework/db/unique-keys.ts';
import { toProblem } from '../../framework/http/problems.ts';

/**
 * Issue 27, point 7: no problem document names a database constraint. Every unique index and
 * exclusion constraint of the migrated database (the installation's modules, no test kit) is
 * declared with the field(s) it protects; a violation of each answers 409 ALREADY_EXISTS in those
 * words, and the ones a request can reach are provoked for real.
 */
let app: TestApp;
let keys: { name: string; table: string; columns: string[]; primary: boolean }[];

beforeAll(async () => {
  app = await startTestApp({ modules: allModules });
  const { rows } = await app.services.db.pool.query<{
    name: string;
    table: string;
    columns: string[];
    primary: boolean;
  }>(
    `select i.relname as name, t.relname as table, c.contype = 'p' as primary,
            array(select a.attname::text from unnest(x.indkey) k join pg_attribute a on a.attrelid = t.oid and a.attnum = k) as columns
       from pg_index x
       join pg_class i on i.oid = x.indexrelid
       join pg_class t on t.oid = x.indrelid
       left join pg_constraint c on c.conindid = x.indexrelid and c.conrelid = t.oid
      where (x.indisunique or c.contype = 'x') and t.relnamespace = 'public'::regnamespace
     union
     select c.conname, c.conrelid::regclass::text, false, '{}'
       from pg_constraint c
      where c.contype in ('u', 'p', 'x') and c.connamespace = 'public'::regnamespace
        and not exists (select 1 from pg_class i where i.oid = c.conindid and i.relname = c.conname)
     order by 2, 1`,
  );
  keys = rows;
});
afterAll(async () => {
  await app?.close();
});

/** The names a problem document must never carry. */
const named = (doc: unknown) => keys.filter((k) => JSON.stringify(doc).includes(k.name)).map((k) => k.name);

describe('unique keys: every one is declared with the field it protects', () => {
  it('lists the migrated keys (pg_constraint and unique indexes) and finds each declared', () => {
    expect(keys.length).toBeGreaterThan(20);
    // A content slug is an entity's uniqueCodes (SLUG_TAKEN naming slug), answered by the generic operations.
    const byUniqueCodes = new Set(
      app.services.registry.entities.flatMap((e) => Object.values(e.def.uniqueCodes ?? {}).map((rule) => rule!.index)),
    );
    // A primary key over a generated id needs no declaration (no request sends one), alone or, on a
    // tenant table, behind its tenant_id (issue 49: every tenant table's key carries it); any other key does.
    const generatedId = (k: (typeof keys)[number]) =>
      k.primary && k.name === `${k.table}_pkey` && ['id', 'id,tenant_id'].includes([...k.columns].sort().join());
    const undeclared = keys
      .filter((k) => !declaredUniqueKeys().has(k.name) && !byUniqueCodes.has(k.name) && !generatedId(k))
      .map((k) => `${k.table}.${k.name} (${k.columns})`);
    expect(undeclared, 'declare these with declareUniqueKeys beside their table').toEqual([]);
    for (const name of byUniqueCodes) expect(keys.map((k) => k.name)).toContain(name);
  });

  it('a violation of each answers 409 ALREADY_EXISTS in words, naming the field and never the constraint', () => {
    for (const { name } of keys) {
      for (const code of ['23505', '23P01']) {
        const doc = toProblem(
          Object.assign(new Error('duplicate key value violates unique constraint'), {
            code,
            constraint: name,
            detail: `Key (x)=(y) already exists.`,
          }),
        ).toDocument();
        expect(doc.status, name).toBe(409);
        expect(doc.code, name).toBe('ALREADY_EXISTS');
        expect(named(doc), name).toEqual([]);
        expect(JSON.stringify(doc), name).not.toMatch(/constraint|Key \(/);
        const key = uniqueKeyOf(name);
        // An entity's uniqueCodes index is answered by the generic operations with its own code.
        if (!key) continue;
        expect(doc.detail, name).toBe(key.detail);
        if (key.fields.length === 1) expect(doc.field, name).toBe(key.fields[0]);
        expect(
          (doc.errors ?? []).map((e) => e.pointer),
          name,
        ).toEqual(key.fields.map((f) => `/body/${f}`));
      }
    }
    // An undeclared one still names nothing.
    const unknown = uniqueViolationProblem({ code: '23505', constraint: 'some_new_table_thing_key' })!.toDocument();
    expect(JSON.stringify(unknown)).not.toContain('some_new_table_thing_key');
  });
});

describe('unique keys: provoked through the API', () => {
  it('plans_code_unique: a taken plan code names the field code', async () => {
    const operator = (await signInAs(app, app.operator, ['billing:catalog', 'billing:read'])).cookie;
    const plan = {
      code: 'taken-code',
      name: 'Plan',
      price: 100,
      currency: 'EUR',
      interval: 'month',
      features: [],
      active: true,
    };
    expect((await app.http().post('/api/v1/billing/plans').set('Cookie', operator).send(plan)).status).toBe(201);
    const again = await app.http().post('/api/v1/billing/plans').set('Cookie', operator).send(plan);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'ALREADY_EXISTS', field: 'code', errors: [{ pointer: '/body/code' }] });
    // The sentence is the plan entity's storage.unique message (issue 50: each fact once).
    expect(again.body.detail).toBe('A live plan with this code already exists');
    expect(named(again.body)).toEqual([]);
  });

  it('users_email_unique: a taken address names the field email', async () => {
    const tenant = await createCustomer(app, 'unique-users');
    const manager = (await signInAs(app, tenant, ['user:manage', 'user:read'])).cookie;
    const http = () => app.http('unique-users.localhost');
    expect(
      (await http().post('/api/v1/user/users').set('Cookie', manager).send({ email: 'same@unique.test' })).status,
    ).toBe(201);
    const again = await http().post('/api/v1/user/users').set('Cookie', manager).send({ email: 'SAME@unique.test' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ALREADY_EXISTS');
    expect(again.body.field).toBe('email');
    expect(named(again.body)).toEqual([]);
  });

  it('tenants_slug_key and tenant_hosts_pkey: simultaneous creates of one slug answer 201 once and 409 naming the field', async () => {
    const operator = (await signInAs(app, app.operator, ['tenant:manage'])).cookie;
    const answers = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        app
          .http()
          .post('/api/v1/tenant/tenants')
          .set('Cookie', operator)
          .send({ slug: 'race', name: 'Race', host: `race-${i}.localhost` }),
      ),
    );
    expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
    for (const res of answers.filter((r) => r.status !== 201)) {
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      expect(res.body).toMatchObject({ code: 'ALREADY_EXISTS', field: 'slug' });
      expect(named(res.body)).toEqual([]);
    }
    const hosts = await Promise.all(
      [1, 2, 3].map((i) =>
        app
          .http()
          .post('/api/v1/tenant/tenants')
          .set('Cookie', operator)
          .send({ slug: `host-race-${i}`, name: 'Race', host: 'same-host.localhost' }),
      ),
    );
    expect(hosts.filter((r) => r.status === 201)).toHaveLength(1);
    for (const res of hosts.filter((r) => r.status !== 201)) {
      expect(res.body).toMatchObject({ code: 'ALREADY_EXISTS', field: 'host' });
      expect(named(res.body)).toEqual([]);
    }
  });
});
