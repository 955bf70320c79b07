import { describe, expect, it } from 'vitest';
import Type from 'typebox';
import { defineEntity, entity, type EntityRow } from '../../framework/entity/define.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';
import { widgetsOf } from '../../framework/admin/resource-pages/widgets.ts';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { dereferenced } from '../helpers/openapi.ts';

/**
 * Issue 50, point 5: `WithDefault` on a writable field makes it optional on create (the column
 * takes the default) and never null in the row, its type, OpenAPI and the catalog; the admin form
 * offers its default and no blank choice. `Type.Optional(WithDefault(…))` reads the same.
 */
const fields = {
  name: Type.String({ minLength: 1, maxLength: 50 }),
  level: WithDefault(StringEnum(['low', 'high']), 'low'),
  shared: Type.Optional(WithDefault(Type.Boolean(), false)),
  note: Type.Optional(Type.String({ maxLength: 50 })),
};
const gauge = resolveEntity(
  entity(
    defineEntity({
      module: 'probe',
      name: 'gauge',
      fields,
      permissions: { read: 'widget:read', write: 'widget:write' },
    }),
  ),
);

// The row type: a field with a default is never null, an optional one without may be.
type Gauge = EntityRow<typeof fields>;
const level: Gauge['level'] = 'low';
const shared: Gauge['shared'] = true;
// @ts-expect-error a field with a column default is never null in the row
const noLevel: Gauge['level'] = null;
// @ts-expect-error Optional(WithDefault(…)) is a not-null column too
const noShared: Gauge['shared'] = null;
const noNote: Gauge['note'] = null;

type Properties = Record<string, { anyOf?: { type?: string }[]; type?: unknown; default?: unknown }>;
const nullable = (schema: { anyOf?: { type?: string }[]; type?: unknown } | undefined) =>
  schema?.anyOf?.some((b) => b.type === 'null') === true ||
  (Array.isArray(schema?.type) && schema.type.includes('null'));

describe('a writable field with a default (WithDefault)', () => {
  it('is optional on create and required, never null, in the row', () => {
    expect([level, shared, noLevel, noShared, noNote]).toHaveLength(5);
    const create = gauge.schemas.create as { required?: string[] };
    expect(create.required).toEqual(['name']);
    const row = gauge.schemas.row as { required?: string[]; properties: Properties };
    expect(row.required).toEqual(expect.arrayContaining(['name', 'level', 'shared']));
    expect(nullable(row.properties.level)).toBe(false);
    expect(nullable(row.properties.shared)).toBe(false);
    expect(nullable(row.properties.note)).toBe(true);
  });

  it('is offered by the form with its default chosen and no blank choice', () => {
    const widgets = widgetsOf(gauge.schemas.create);
    const byName = Object.fromEntries(widgets.map((w) => [w.name, w]));
    expect(byName.level).toMatchObject({ kind: 'select', required: true, defaultValue: 'low' });
    expect(byName.shared).toMatchObject({ kind: 'checkbox', required: true, defaultValue: false });
    expect(byName.note!.required).toBe(false);
  });

  describe('in the served API (the task status, WithDefault open)', () => {
    const t = useTestApp({ customers: ['defaults'] });
    const HOST = 'defaults.localhost';

    it('OpenAPI and the catalog agree: not required on create, never null in the row', async () => {
      const doc = await dereferenced((await t.app.http().get('/api/v1/openapi.json')).body);
      const post = doc.paths['/api/v1/task/tasks'].post.requestBody.content['application/json'].schema;
      expect(post.required).not.toContain('status');
      expect(post.properties.status.default).toBe('open');
      const read = doc.paths['/api/v1/task/tasks/{id}'].get.responses['200'].content['application/json'].schema;
      expect(read.required).toContain('status');
      expect(nullable(read.properties.status)).toBe(false);

      const who = await signInAs(t.app, t.defaults, ['*']);
      const catalog = await t.app.http(HOST).get('/api/v1/admin/resources').set('Cookie', who.cookie);
      const task = catalog.body.resources.find((r: { key: string }) => r.key === 'task.task');
      expect(task.schema.required).toContain('status');
      expect(nullable(task.schema.properties.status)).toBe(false);
    });

    it('a create that leaves it out stores the default', async () => {
      const who = await signInAs(t.app, t.defaults, ['task:read', 'task:update']);
      const created = await t.app
        .http(HOST)
        .post('/api/v1/task/tasks')
        .set('Cookie', who.cookie)
        .send({ title: 'Defaulted', priority: 'low', deadline: '2031-01-01T00:00:00.000Z' });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.status).toBe('open');
    });
  });
});
