import { describe, expect, it } from 'vitest';
import Type from 'typebox';
import { nameSchemas } from '../../framework/openapi/named-schemas.ts';
import { named, nameOf } from '../../framework/openapi/schema-name.ts';
import { pageSchema } from '../../framework/operations/page-query.ts';
import { schemaNames } from '../../framework/entity/names.ts';

const json = (schema: unknown) => ({ content: { 'application/json': { schema } } });
const documentWith = (operations: Record<string, unknown>) => ({
  openapi: '3.1.0',
  components: { schemas: {} },
  paths: { '/x': operations },
});

describe('named schemas in the OpenAPI document', () => {
  it("derives an entity's schema names from its name, in one place", () => {
    const names = schemaNames('task');
    expect([names.read, names.create, names.update, names.page, names.command('check-sla')]).toEqual([
      'Task',
      'TaskCreate',
      'TaskUpdate',
      'TaskPage',
      'TaskCheckSla',
    ]);
    expect(schemaNames('role-assignment').read).toBe('RoleAssignment');
  });

  it('keeps a named schema a TypeBox type the validators still know, and names its page after it', () => {
    const item = named(Type.Object({ a: Type.String() }), 'Thing');
    expect(Type.IsObject(item)).toBe(true);
    expect(nameOf(pageSchema(item))).toBe('ThingPage');
    // A hand-written schema goes by its title when the title is a type name.
    expect(nameOf(Type.Object({}, { title: 'Identity' }))).toBe('Identity');
    expect(nameOf(Type.Object({}, { title: 'Blog post' }))).toBeUndefined();
  });

  it('moves named schemas, nested ones first, to components.schemas and leaves $refs; names the rest after the operation', () => {
    const item = named(Type.Object({ a: Type.String() }), 'Thing');
    const doc = nameSchemas(
      documentWith({
        get: { operationId: 'm-thing-list', responses: { 200: { description: 'A page', ...json(pageSchema(item)) } } },
        post: {
          operationId: 'm-thing-make',
          requestBody: json({ type: 'object', properties: { b: { type: 'string' } } }),
          responses: { 201: { description: 'Made', ...json(item) } },
        },
      }),
    ) as {
      paths: {
        '/x': Record<
          string,
          {
            requestBody?: { content: Record<string, { schema: unknown }> };
            responses: Record<string, { content: Record<string, { schema: unknown }> }>;
          }
        >;
      };
      components: { schemas: Record<string, Record<string, unknown>> };
    };
    const ops = doc.paths['/x'];
    expect(ops.get!.responses['200']!.content['application/json']!.schema).toEqual({
      $ref: '#/components/schemas/ThingPage',
    });
    expect(ops.post!.responses['201']!.content['application/json']!.schema).toEqual({
      $ref: '#/components/schemas/Thing',
    });
    expect(ops.post!.requestBody!.content['application/json']!.schema).toEqual({
      $ref: '#/components/schemas/MThingMakeRequest',
    });
    expect(doc.components.schemas.ThingPage!.properties).toMatchObject({
      items: { type: 'array', items: { $ref: '#/components/schemas/Thing' } },
    });
    // The naming keyword itself does not reach the consumer.
    expect(JSON.stringify(doc)).not.toContain('x-schema-name');
  });

  it('refuses two different schemas under one name rather than letting one replace the other', () => {
    const one = named(Type.Object({ a: Type.String() }), 'Thing');
    const other = named(Type.Object({ a: Type.Integer() }), 'Thing');
    const doc = documentWith({
      get: { operationId: 'm-thing-read', responses: { 200: { description: 'One', ...json(one) } } },
      put: { operationId: 'm-thing-put', responses: { 200: { description: 'Other', ...json(other) } } },
    });
    expect(() => nameSchemas(doc)).toThrow(/two different schemas are named Thing/);
  });
});
