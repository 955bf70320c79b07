import { describe, expect, it } from 'vitest';
import Type from 'typebox';
import { entityNames } from '../../framework/entity/names.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { defineEntity, entity } from '../../framework/entity/define.ts';
import { widget } from '../helpers/testkit-module.ts';

describe('names are derived in one place', () => {
  it('derives table, path, operation ids, events and labels from module and entity', () => {
    const task = entityNames({ module: 'task', name: 'task' });
    expect(task).toMatchObject({
      key: 'task.task',
      plural: 'tasks',
      table: 'tasks',
      path: '/api/v1/task/tasks',
      label: 'Task',
      labelPlural: 'Tasks',
      adminPath: '/admin/task/tasks',
      events: { created: 'task.task.created', updated: 'task.task.updated', deleted: 'task.task.deleted' },
    });
    expect(task.operationId('list')).toBe('task-task-list');
    expect(task.operationId('assign')).toBe('task-task-assign');
    expect(entityNames({ module: 'tenant', name: 'tenant' }).operationId('suspend')).toBe('tenant-tenant-suspend');
  });

  it('takes overrides for irregular plurals, tables, labels and event names', () => {
    const names = entityNames({
      module: 'content',
      name: 'category',
      plural: 'categories',
      table: 'content_categories',
      label: 'Section',
      events: { created: 'content.category_added' },
    });
    expect(names).toMatchObject({
      path: '/api/v1/content/categories',
      adminPath: '/admin/content/categories',
      table: 'content_categories',
      label: 'Section',
      labelPlural: 'Categories',
    });
    expect(names.events).toEqual({
      created: 'content.category_added',
      updated: 'content.category.updated',
      deleted: 'content.category.deleted',
    });
  });

  it('maps camelCase fields to snake_case columns and derives the request schemas', () => {
    const resolved = resolveEntity(entity(widget));
    expect(resolved.columns).toMatchObject({ approvedAt: 'approved_at', name: 'name' });
    expect(resolved.writable).toEqual(['name', 'size', 'note', 'color']);
    expect(resolved.patchable).toEqual(['name', 'size', 'note']);
    expect(resolved.commandOwned).toEqual({ approved: 'approve', approvedAt: 'approve' });
    expect(resolved.sortable).toEqual(['createdAt', 'updatedAt', 'name', 'size']);
    expect(resolved.commandRoute('approve')).toBe('POST /api/v1/testkit/widgets/{id}/approve');
  });

  it('reads an optional field as nullable in the row schema', () => {
    const thing = resolveEntity(
      entity(
        defineEntity({
          module: 'm',
          name: 'thing',
          fields: { a: Type.Optional(Type.String()) },
          permissions: { read: 'r', write: 'w' },
        }),
      ),
    );
    const row = thing.schemas.row as unknown as {
      properties: { a: { anyOf: { type: string }[] } };
      required: string[];
    };
    expect(row.properties.a.anyOf.map((s) => s.type)).toEqual(['string', 'null']);
    expect(row.required).toContain('a');
  });
});
