import type { ModuleRegistry as Registry } from '../../contracts/services.ts';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import { titleCase } from '../../entity/names.ts';
import type { Widget } from './widgets.ts';
import { peopleLabels } from '../labels.ts';

/**
 * Checkbox groups of declared names: an array field lists its choices in its schema (an enum of
 * its items), or the entity declares where they come from (EntityAdmin.choices: the events
 * the modules declare). Events are grouped by the module declaring them and read as people name
 * them ("Task created", "Published", or the module's declared words: ModuleAdmin.eventLabels): an
 * event's name is for programs, and never shown.
 */

type Option = NonNullable<Widget['options']>[number];

/** Every declared event with its module's heading and its words, in module order: worked out once at startup. */
export function eventCatalog(registry: Registry): Map<string, { group: string; label: string }> {
  const catalog = new Map<string, { group: string; label: string }>();
  for (const module of registry.modules) {
    const group = module.admin?.label ?? titleCase(module.name);
    for (const entity of registry.entities.filter((e) => e.module === module.name)) {
      const name = peopleLabels(entity).label;
      const { created, updated, deleted } = entity.names.events;
      catalog.set(created, { group, label: `${name} created` });
      catalog.set(updated, { group, label: `${name} changed` });
      catalog.set(deleted, { group, label: `${name} deleted` });
    }
    for (const event of registry.eventsByModule.get(module.name) ?? module.events ?? []) {
      if (catalog.has(event)) continue;
      const words = event.startsWith(`${module.name}.`) ? event.slice(module.name.length + 1) : event;
      const label = module.admin?.eventLabels?.[event] ?? titleCase(words.replaceAll('.', ' '));
      catalog.set(event, { group, label });
    }
  }
  // The framework's own events (an import handed to the worker), after the modules'.
  for (const event of registry.events)
    if (!catalog.has(event)) catalog.set(event, { group: 'Service', label: titleCase(event.replaceAll('.', ' ')) });
  return catalog;
}

/**
 * The entity's form widgets with their declared choices: an array field the entity declares
 * (`choices`) becomes a checkbox group, of its schema's enum when it has one, else of what the
 * declaration names; events are grouped and worded by the catalog, and the declared "all" value
 * comes first under its own label.
 */
export function withDeclaredChoices(
  entity: ResolvedEntity,
  widgets: readonly Widget[],
  events: ReadonlyMap<string, { group: string; label: string }>,
): Widget[] {
  return widgets.map((widget) => {
    const declared = entity.def.admin?.choices?.[widget.name];
    if (!declared || (widget.kind !== 'checkboxes' && widget.kind !== 'list')) return widget;
    const order = [...events.keys()];
    const rank = (value: string) => (order.includes(value) ? order.indexOf(value) : order.length);
    // The schema's own values when it lists them (in the catalog's order, so each module's run together), else every declared event.
    const values =
      widget.kind === 'checkboxes' ? widget.options!.map((o) => o.value).sort((a, b) => rank(a) - rank(b)) : order;
    const all = declared.all;
    const options: Option[] = [];
    if (all && (widget.kind === 'list' || values.includes(all.value)))
      options.push({ value: all.value, label: all.label });
    for (const value of values) {
      if (value === all?.value) continue;
      const known = events.get(value);
      options.push(known ? { value, label: known.label, group: known.group } : { value, label: value });
    }
    // The list widget's "separate with commas" hint does not apply to boxes.
    const hint = entity.def.admin?.fieldText?.[widget.name]?.hint;
    const { hint: _listHint, ...rest } = widget;
    return { ...rest, kind: 'checkboxes', options, ...(hint ? { hint } : {}) };
  });
}

/** Value → label of each checkbox group, for lists and detail pages to show the values as the form names them. */
export function choiceLabelsOf(widgets: readonly Widget[]): Map<string, Map<string, string>> {
  const labels = new Map<string, Map<string, string>>();
  for (const widget of widgets)
    if (widget.kind === 'checkboxes' && widget.options)
      labels.set(widget.name, new Map(widget.options.map((o) => [o.value, o.label])));
  return labels;
}
