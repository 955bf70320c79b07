import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Type from 'typebox';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineEntity, defineModule, entity } from '../../framework/entity/define.ts';

/**
 * A public read on an entity that deletes hard: its table has no deleted_at, so the lookup must
 * not name one (it follows the entity's delete mode), and a deleted row is gone for the reader too.
 */

const migrations = mkdtempSync(join(tmpdir(), 'tenantry-public-read-hard-'));
writeFileSync(
  join(migrations, '0001_plaques.sql'),
  `create table plaques (
     id uuid primary key default gen_random_uuid(),
     tenant_id uuid not null default app_tenant_id(),
     code text not null,
     inscription text not null,
     created_at timestamptz not null default now(),
     updated_at timestamptz not null default now()
   );
   create unique index plaques_code_unique on plaques (tenant_id, code);
   create index plaques_list on plaques (tenant_id, created_at, id);
   call make_tenant_table('plaques');
   call watch_public_read('plaques');`,
);

const PlaquePage = Type.Object({ code: Type.String(), inscription: Type.String() }, { additionalProperties: false });

/** A plaque anybody may read by its code; DELETE removes it for good. */
const plaque = defineEntity({
  module: 'hardread',
  name: 'plaque',
  storage: { deleteMode: 'hard' },
  fields: {
    code: Type.String({ pattern: '^[a-z0-9-]+$', minLength: 1, maxLength: 40 }),
    inscription: Type.String({ minLength: 1, maxLength: 200 }),
  },
  permissions: { read: 'widget:read', write: 'widget:write' },
  publicRead: {
    by: 'code',
    schema: PlaquePage,
    shape: (row) => ({ code: row.code, inscription: row.inscription }),
  },
});
const probe = defineModule({ name: 'hardread', entities: [entity(plaque)], migrations });

const HOST = 'plaques.localhost';
const PLAQUES = '/api/v1/hardread/plaques';
const PUBLIC = '/api/v1/hardread/public';
let app: TestApp;
let cookie: string;

beforeAll(async () => {
  app = await startTestApp({ modules: [...allModules, testkitModule, probe] });
  const tenant = await createCustomer(app, 'plaques', HOST);
  cookie = (await signInAs(app, tenant, ['widget:read', 'widget:write'])).cookie;
});
afterAll(async () => {
  await app?.close();
  rmSync(migrations, { recursive: true, force: true });
});

describe('a public read on a hard-delete entity', () => {
  it('answers its first request, and answers 404 once the row is deleted', async () => {
    const created = await app
      .http(HOST)
      .post(PLAQUES)
      .set('Cookie', cookie)
      .send({ code: 'founders', inscription: 'Laid in 2026' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const first = await app.http(HOST).get(`${PUBLIC}/founders`);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toEqual({ code: 'founders', inscription: 'Laid in 2026' });
    const etag = first.headers.etag!;
    expect((await app.http(HOST).get(`${PUBLIC}/founders`).set('If-None-Match', etag)).status).toBe(304);

    expect((await app.http(HOST).delete(`${PLAQUES}/${created.body.id}`).set('Cookie', cookie)).status).toBe(204);
    const { rows } = await app.services.db.pool.query('select 1 from plaques where id = $1', [created.body.id]);
    expect(rows).toHaveLength(0);
    for (const res of [
      await app.http(HOST).get(`${PUBLIC}/founders`),
      await app.http(HOST).get(`${PUBLIC}/founders`).set('If-None-Match', etag),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('NOT_FOUND');
    }
    expect((await app.http(HOST).get(`${PUBLIC}/never-laid`)).body.code).toBe('NOT_FOUND');
  });
});
