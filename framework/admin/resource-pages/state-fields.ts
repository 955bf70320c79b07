import type { Access } from '../../entity/define.ts';
import { titleCase } from '../../entity/names.ts';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import { offersCommand, stateOf } from '../../operations/command-states.ts';
import type { Api, Row } from './resource-api.ts';
import { choiceLabel, type Widget } from './widgets.ts';
import { peopleLabels } from '../labels.ts';

/**
 * What a generated form offers for an entity's state field (EntityDefinition.states), read from
 * the declarations the API itself enforces, so a form never offers a value the API refuses:
 * a create only the states a create may take, an edit only the moves a PATCH may make from the
 * record's state, with the commands that reach the others named beside it.
 */

/** A create form's inputs, and the values it sends without asking: choices that leave nothing to choose. */
export interface CreateInputs {
  inputs: Widget[];
  /** Field → the one value the create may take there (the body carries it; the form shows no field). */
  fixed: Record<string, string>;
}

/**
 * The create form's widgets: the state field narrowed to the states a create may take
 * (`states.initial`), and every select left with a single forced choice taken out of the form
 * (its value is sent as is): a required one, the narrowed state field, or one whose default is
 * that choice. Worked out once at startup.
 */
export function createInputs(entity: ResolvedEntity, widgets: readonly Widget[]): CreateInputs {
  const initial = entity.def.states?.initial;
  const stateField = entity.def.states?.field;
  const inputs: Widget[] = [];
  const fixed: Record<string, string> = {};
  for (const widget of widgets) {
    const narrowed = widget.name === stateField && initial !== undefined && widget.options !== undefined;
    const options = narrowed ? widget.options!.filter((o) => initial.includes(o.value)) : widget.options;
    const only = options?.length === 1 ? options[0]!.value : undefined;
    if (only !== undefined && (widget.required || narrowed || widget.defaultValue === only)) {
      fixed[widget.name] = only;
      continue;
    }
    inputs.push(options === widget.options ? widget : { ...widget, options: options! });
  }
  return { inputs, fixed };
}

/** An edit form's state field, as the record stands: a select of the reachable states, or a value it cannot change here. */
export type StateFieldModel = { kind: 'select'; widget: Widget } | { kind: 'fixed'; hint: string | undefined };

/**
 * The edit form's state field for this record: the state it holds and the moves a PATCH may make
 * from it (`states.patchMoves`), and a sentence naming each command the caller may run here that
 * leads to a state the form cannot reach (`CommandStates.to`). Undefined for any other field, or
 * an entity that declares no moves.
 */
export function editStateField(
  entity: ResolvedEntity,
  api: Api,
  widget: Widget,
  row: Row,
  can: (access: Access) => boolean,
): StateFieldModel | undefined {
  const states = entity.def.states;
  if (!states?.patchMoves || widget.name !== states.field || !widget.options) return undefined;
  const current = stateOf(entity, row);
  const reachable = new Set([current, ...states.patchMoves(row as never)]);
  const options = widget.options.filter((o) => reachable.has(o.value));
  const offered = new Set(options.map((o) => o.value));
  const pointers = api.commands.flatMap(({ name, route }) => {
    const to = entity.def.commands?.[name]?.states?.to;
    if (to === undefined || offered.has(to) || !can(route.access) || !offersCommand(entity, name, row)) return [];
    const label = entity.def.commands?.[name]?.admin?.label ?? titleCase(name);
    return [
      `To move it to ${choiceLabel(to).toLowerCase()}, use the “${label}” button on the ${peopleLabels(entity).label.toLowerCase()}’s page.`,
    ];
  });
  const pointer = pointers.length ? pointers.join(' ') : undefined;
  if (options.length <= 1) return { kind: 'fixed', hint: pointer ?? widget.hint };
  const hint = [widget.hint, pointer].filter(Boolean).join(' ');
  // The state it holds is among the options, so there is no "none" to offer.
  return { kind: 'select', widget: { ...widget, options, required: true, ...(hint ? { hint } : {}) } };
}
