import Type, { type TString, type TStringOptions } from 'typebox';
import type { AnyEntity } from './entity-definition.ts';

/**
 * The vendor keyword marking a string field whose values are the service's event names. The
 * registry, once every module's events are known, replaces the mark with the schema's `enum`
 * (withEventNames): validation, the OpenAPI document, the catalog and the admin shell all read the
 * same list.
 */
export const EVENT_NAMES = 'x-event-names';

interface EventNameMark {
  /** Values accepted besides the event names, listed first (a wildcard). */
  also: readonly string[];
}

/**
 * A field (or array item) that takes an event name the modules declare, e.g. what a webhook
 * endpoint subscribes to. Its enum is filled in at boot from every module's events and every
 * entity's lifecycle events, sorted, after `also`.
 */
export function EventName(options: TStringOptions & { also?: readonly string[] } = {}): TString {
  const { also = [], ...rest } = options;
  return Type.String({ ...rest, [EVENT_NAMES]: { also: [...also] } satisfies EventNameMark });
}

const isPlain = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A copy keeping every own property, TypeBox's non-enumerable kind included. */
const copyOf = (schema: Record<string, unknown>): Record<string, unknown> =>
  Object.create(Object.getPrototypeOf(schema), Object.getOwnPropertyDescriptors(schema)) as Record<string, unknown>;

/** The schema with each event-name mark replaced by its enum; the same object where there is none. */
function substitute(schema: unknown, events: readonly string[]): unknown {
  if (Array.isArray(schema)) {
    const items = schema.map((item) => substitute(item, events));
    return items.some((item, i) => item !== schema[i]) ? items : schema;
  }
  if (!isPlain(schema)) return schema;
  const mark = schema[EVENT_NAMES] as EventNameMark | undefined;
  if (mark) {
    const copy = copyOf(schema);
    delete copy[EVENT_NAMES];
    copy.enum = [...mark.also, ...events.filter((e) => !mark.also.includes(e))];
    return copy;
  }
  let copy: Record<string, unknown> | undefined;
  for (const key of ['items', 'properties', 'anyOf', 'oneOf', 'allOf']) {
    if (!(key in schema)) continue;
    const value = schema[key];
    const next =
      key === 'properties' && isPlain(value) ? substituteProperties(value, events) : substitute(value, events);
    if (next === value) continue;
    copy ??= copyOf(schema);
    copy[key] = next;
  }
  return copy ?? schema;
}

function substituteProperties(properties: Record<string, unknown>, events: readonly string[]) {
  let copy: Record<string, unknown> | undefined;
  for (const [name, value] of Object.entries(properties)) {
    const next = substitute(value, events);
    if (next === value) continue;
    copy ??= { ...properties };
    copy[name] = next;
  }
  return copy ?? properties;
}

/**
 * The entity with every event-name field's enum filled in from the declared events (sorted); the
 * same definition when none of its fields takes event names.
 */
export function withEventNames(definition: AnyEntity, declared: ReadonlySet<string>): AnyEntity {
  const events = [...declared].sort();
  const fields = substituteProperties(definition.fields, events) as AnyEntity['fields'];
  return fields === definition.fields ? definition : { ...definition, fields };
}
