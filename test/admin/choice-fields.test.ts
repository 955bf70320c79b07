import Type from 'typebox';
import { describe, expect, it } from 'vitest';
import { Registry } from '../../framework/entity/registry.ts';
import type { AnyEntity } from '../../framework/entity/define.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { eventCatalog, withDeclaredChoices } from '../../framework/admin/resource-pages/choice-fields.ts';
import { fromForm, widgetsOf } from '../../framework/admin/resource-pages/widgets.ts';
import { endpoint } from '../../modules/webhook/endpoint.entity.ts';
import { allModules } from '../../modules/index.ts';
import { testConfig } from '../helpers/config.ts';

// Issue 42, point 3: an array-of-enum field is a checkbox group; a webhook endpoint's events are
// the enum's values when its schema lists them, else the events the modules declare, grouped by
// module and worded for people, "all events" first. Either way the form posts a list.

const registry = new Registry(allModules, testConfig());
const events = eventCatalog(registry);
const endpointEntity = endpoint as unknown as AnyEntity;

const eventsWidget = (entity: AnyEntity) => {
  const resolved = resolveEntity(entity);
  const widgets = widgetsOf(resolved.schemas.create, (field) => entity.admin?.fieldText?.[field]);
  return withDeclaredChoices(resolved, widgets, events).find((w) => w.name === 'events')!;
};

describe('checkbox groups of declared choices', () => {
  it('an array of enumerated values is one checkbox per value', () => {
    const [widget] = widgetsOf(
      Type.Object({ sizes: Type.Array(Type.Union([Type.Literal('small'), Type.Literal('extra_large')])) }),
    );
    expect(widget).toMatchObject({
      kind: 'checkboxes',
      options: [
        { value: 'small', label: 'Small' },
        { value: 'extra_large', label: 'Extra large' },
      ],
    });
    // The empty marker first, then what was ticked; the marker alone is an empty list.
    expect(fromForm(widget!, ['', 'small', 'extra_large'])).toEqual(['small', 'extra_large']);
    expect(fromForm(widget!, '')).toEqual([]);
    expect(fromForm(widget!, undefined)).toBeUndefined();
  });

  it('events whose schema lists no values: every declared event, by module, "all events" first', () => {
    const widget = eventsWidget(endpointEntity);
    expect(widget.kind).toBe('checkboxes');
    expect(widget.options![0]).toEqual({ value: '*', label: 'All events, also kinds added later' });
    expect(widget.options!.length).toBe(registry.events.size + 1);
    expect(widget.options).toEqual(
      expect.arrayContaining([
        { value: 'task.task.created', label: 'Task created', group: 'Tasks' },
        { value: 'task.resolved', label: 'Resolved', group: 'Tasks' },
        // The module's own words where the name's read badly ("Sla breached").
        { value: 'task.sla_breached', label: 'Missed its due date', group: 'Tasks' },
        { value: 'webhook.endpoint.secret_rotated', label: 'Endpoint secret rotated', group: 'Webhooks' },
      ]),
    );
    // Each module's events in one run, so each heading is said once.
    const groups = widget.options!.slice(1).map((o) => o.group);
    expect(groups.filter((g, i) => g !== groups[i - 1])).toEqual([...new Set(groups)]);
  });

  it('events whose schema lists them (an enum): those values only, grouped and worded the same way', () => {
    const listed = Type.Array(
      Type.Union([
        Type.Literal('content.published'),
        Type.Literal('*'),
        Type.Literal('task.resolved'),
        Type.Literal('task.task.created'),
      ]),
      { minItems: 1 },
    );
    const changed = { ...endpointEntity, fields: { ...endpointEntity.fields, events: listed } } as AnyEntity;
    expect(eventsWidget(changed).options).toEqual([
      { value: '*', label: 'All events, also kinds added later' },
      { value: 'task.task.created', label: 'Task created', group: 'Tasks' },
      { value: 'task.resolved', label: 'Resolved', group: 'Tasks' },
      { value: 'content.published', label: 'Published', group: 'Pages and posts' },
    ]);
  });
});
