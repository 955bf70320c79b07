import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { createMigratedTestDatabase } from '../helpers/database.ts';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineEntity, defineModule, entity } from '../../framework/entity/define.ts';
import { migrationSources } from '../../framework/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * Field rules an entity declares and the framework applies (docs/module-authoring.md, "Field
 * rules"): a normaliser before validation and lookup, a field's own invalid and unique codes, a
 * read-only field's reason, the fields lifecycle events carry, and the public read's Cache-Control.
 */
const gizmo = defineEntity({
  module: 'ruleprobe',
  name: 'gizmo',
  storage: { table: 'widgets' },
  fields: {
    name: Type.String({ minLength: 1, maxLength: 20, pattern: '^[a-z]+$' }),
    size: Type.Integer({ minimum: 0, maximum: 1000 }),
    note: Type.Optional(Type.String()),
    color: Type.String(),
  },
  readOnly: ['note'],
  readOnlyReasons: { note: 'written by the probe itself' },
  normalise: { name: (value) => value.trim().toLowerCase() },
  invalidCodes: { name: 'SLUG_INVALID' },
  uniqueCodes: { name: { index: 'widgets_name_unique', code: 'SLUG_TAKEN' } },
  eventFields: ['name'],
  permissions: { read: 'widget:read', write: 'widget:write' },
  publicRead: {
    by: 'name',
    cacheControl: 'public, no-cache',
    schema: Type.Object({ name: Type.String() }, { additionalProperties: false }),
    shape: (row) => ({ name: row.name }),
  },
});

const probe = defineModule({ name: 'ruleprobe', entities: [entity(gizmo)] });

const HOST = 'rules.localhost';
const BASE = '/api/v1/ruleprobe/gizmos';
let app: TestApp;
let tenant: TenantRef;
let cookie: string;

beforeAll(async () => {
  // The probe reads the test kit's widgets publicly: that table needs the public read's trigger,
  // installed once the migrations have made it, before the probe's boot check looks.
  // A copy of the run's migrated template: the first app has no migration left to run.
  const databaseUrl = await createMigratedTestDatabase(migrationSources([...allModules, testkitModule]));
  const plain = await startTestApp({ databaseUrl });
  await plain.services.db.pool.query(`call watch_public_read('widgets')`);
  await plain.close();
  app = await startTestApp({ databaseUrl, modules: [...allModules, testkitModule, probe] });
  tenant = await createCustomer(app, 'rules', HOST);
  cookie = (await signInAs(app, tenant, ['widget:read', 'widget:write'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

const create = (body: Record<string, unknown>) =>
  app
    .http(HOST)
    .post(BASE)
    .set('Cookie', cookie)
    .send({ size: 1, color: 'red', ...body });

describe('entity field rules', () => {
  it('normalise: a body value is put in its stored form before it is validated (create and PATCH)', async () => {
    const res = await create({ name: '  Alpha ' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.name).toBe('alpha');
    const patched = await app.http(HOST).patch(`${BASE}/${res.body.id}`).set('Cookie', cookie).send({ name: 'ALPHAS' });
    expect(patched.body.name).toBe('alphas');
  });

  it('invalidCodes: a value outside the field’s schema answers the field’s code; failures of other fields too keep VALIDATION_FAILED', async () => {
    const only = await create({ name: 'a1' });
    expect(only.status).toBe(422);
    expect(only.body).toMatchObject({
      code: 'SLUG_INVALID',
      errors: [expect.objectContaining({ pointer: '/body/name' })],
    });
    const mixed = await create({ name: 'a1', size: -1 });
    expect(mixed.status).toBe(422);
    expect(mixed.body.code).toBe('VALIDATION_FAILED');
    expect((await create({ name: 'beta', size: -1 })).body.code).toBe('VALIDATION_FAILED');
  });

  it('uniqueCodes: a duplicate refused by the named index answers the field’s code, naming the field', async () => {
    expect((await create({ name: 'gamma' })).status).toBe(201);
    const again = await create({ name: ' GAMMA' });
    expect(again.status).toBe(409);
    expect(again.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(again.body).toMatchObject({ code: 'SLUG_TAKEN', field: 'name' });
  });

  it('readOnlyReasons: the refusal of a read-only field says why', async () => {
    const res = await create({ name: 'delta', note: 'x' });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      code: 'FIELD_IMMUTABLE',
      field: 'note',
      detail: 'note is written by the probe itself',
    });
  });

  it('eventFields: the created, updated and deleted events carry the listed fields besides the id', async () => {
    const row = (await create({ name: 'epsilon' })).body;
    await app.http(HOST).patch(`${BASE}/${row.id}`).set('Cookie', cookie).send({ size: 2 });
    await app.http(HOST).delete(`${BASE}/${row.id}`).set('Cookie', cookie);
    const { rows } = await app.services.db.pool.query(
      `select name, payload from outbox where tenant_id = $1 and payload->>'id' = $2 order by id`,
      [tenant.id, row.id],
    );
    expect(rows).toEqual([
      { name: 'ruleprobe.gizmo.created', payload: { id: row.id, name: 'epsilon' } },
      { name: 'ruleprobe.gizmo.updated', payload: { id: row.id, name: 'epsilon', changed: ['size'] } },
      { name: 'ruleprobe.gizmo.deleted', payload: { id: row.id, name: 'epsilon' } },
    ]);
  });

  it('public read: the parameter is normalised like the field, then checked (the field’s code), and the answer carries the declared Cache-Control', async () => {
    expect((await create({ name: 'zeta' })).status).toBe(201);
    const found = await app.http(HOST).get(`/api/v1/ruleprobe/public/${encodeURIComponent(' ZETA ')}`);
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body).toEqual({ name: 'zeta' });
    expect(found.headers['cache-control']).toBe('public, no-cache');
    const notModified = await app
      .http(HOST)
      .get('/api/v1/ruleprobe/public/zeta')
      .set('If-None-Match', found.headers.etag as string);
    expect(notModified.status).toBe(304);
    expect(notModified.headers['cache-control']).toBe('public, no-cache');
    const invalid = await app.http(HOST).get('/api/v1/ruleprobe/public/z1');
    expect(invalid.status).toBe(422);
    expect(invalid.body).toMatchObject({
      code: 'SLUG_INVALID',
      errors: [expect.objectContaining({ pointer: '/params/name' })],
    });
  });
});
